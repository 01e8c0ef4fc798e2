// The tokenizer-bpe plugin's C ABI: probe/create pick the backend (gguf-bpe, gguf-spm, hf-json),
// the rest forwards to wo::tok::Tokenizer. No exception crosses this file's functions.
#include "pre_patterns.hpp"
#include "tokenizer.hpp"

#include <worker/sdk.hpp>

#include <cstring>

// Encoding is safe from several threads on one instance; last_error() then reports the latest
// failure of any of them.
struct wo_tokenizer_instance {
  std::unique_ptr<wo::tok::Tokenizer> tok;
  std::string error;
};

namespace {

// Scores: an explicit tokenizer.json wins over the GGUF's own vocabulary; a GGUF whose pre value
// is unknown still scores (lower) so that create() reports the value and the supported list
// instead of the host saying that no plugin fits.
constexpr int32_t kScoreJson = 200;
constexpr int32_t kScoreGguf = 100;
constexpr int32_t kScoreGgufUnknownPre = 10;

int32_t probe(const wo_host *host, const wo_tokenizer_config *cfg) {
  try {
    if (cfg && WO_HAS_FIELD(wo_tokenizer_config, cfg->struct_size, tokenizer_json) && cfg->tokenizer_json &&
        *cfg->tokenizer_json) {
      // Asked for explicitly: claim it even when the file is unreadable, so that create() can say
      // which path failed instead of the host reporting that no tokenizer fits.
      return kScoreJson;
    }
    if (!host || !host->meta_get) return 0;
    wo::HostView h(host);
    auto model = h.opt_str("tokenizer.ggml.model");
    if (!model) return 0;
    if (*model == "llama") return h.has("tokenizer.ggml.tokens") ? kScoreGguf : 0;
    if (*model == "gpt2") {
      if (!h.has("tokenizer.ggml.tokens") || !h.has("tokenizer.ggml.merges")) return 0;
      auto pre = h.opt_str("tokenizer.ggml.pre").value_or("default");
      return wo::tok::pre_rule(pre) ? kScoreGguf : kScoreGgufUnknownPre;
    }
    return 0;
  } catch (...) {
    return 0;
  }
}

// create() has no instance to keep a message in when it fails; the host reads it from here.
std::string &create_error() {
  thread_local std::string e;
  return e;
}

wo_status create(const wo_host *host, const wo_tokenizer_config *cfg, wo_tokenizer_instance **out) {
  if (!out) return WO_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  auto inst = std::make_unique<wo_tokenizer_instance>();
  wo_status s = wo::guard(create_error(), [&] {
    if (cfg && WO_HAS_FIELD(wo_tokenizer_config, cfg->struct_size, tokenizer_json) && cfg->tokenizer_json &&
        *cfg->tokenizer_json) {
      inst->tok = wo::tok::Tokenizer::from_hf_json(cfg->tokenizer_json);
    } else {
      if (!host || !host->meta_get)
        throw wo::Error(WO_ERR_INVALID_ARGUMENT, "no host metadata and no tokenizer_json given");
      inst->tok = wo::tok::Tokenizer::from_gguf(wo::HostView(host));
    }
    const wo::tok::Vocab &v = inst->tok->vocab();
    wo::HostView(host).log(WO_LOG_INFO, std::string("tokenizer-bpe: ") + inst->tok->kind() + " backend, " +
                                            std::to_string(v.size()) + " tokens, bos " +
                                            std::to_string(v.bos) + ", eos " + std::to_string(v.eos) + ", " +
                                            std::to_string(v.eog.size()) + " end-of-generation ids");
  });
  if (s != WO_OK) {
    if (host && host->log) host->log(host->ctx, WO_LOG_ERROR, create_error().c_str());
    return s;
  }
  *out = inst.release();
  return WO_OK;
}

void destroy(wo_tokenizer_instance *inst) { delete inst; }

wo_status encode(wo_tokenizer_instance *inst, const char *text, size_t len, uint32_t flags, int32_t *out,
                 size_t cap, size_t *n_out) {
  if (!inst) return WO_ERR_INVALID_ARGUMENT;
  return wo::guard(inst->error, [&] {
    if (!text && len)
      throw wo::Error(WO_ERR_INVALID_ARGUMENT, "encode: text is NULL but len is " + std::to_string(len));
    if (!n_out) throw wo::Error(WO_ERR_INVALID_ARGUMENT, "encode: n_out is NULL");
    std::vector<int32_t> ids;
    inst->tok->encode(std::string_view(text ? text : "", len), (flags & WO_TOK_ADD_SPECIAL) != 0,
                      (flags & WO_TOK_PARSE_SPECIAL) != 0, ids);
    *n_out = ids.size();
    if (ids.size() > cap || (!out && !ids.empty()))
      throw wo::Error(WO_ERR_BUFFER_TOO_SMALL, "encode: " + std::to_string(ids.size()) +
                                                   " ids do not fit the capacity of " + std::to_string(cap));
    if (!ids.empty()) std::memcpy(out, ids.data(), ids.size() * sizeof(int32_t));
  });
}

wo_status token_bytes(const wo_tokenizer_instance *inst, int32_t id, wo_str *out) {
  if (!inst || !out) return WO_ERR_INVALID_ARGUMENT;
  auto *mut = const_cast<wo_tokenizer_instance *>(inst); // only its error text changes
  return wo::guard(mut->error, [&] {
    const std::string &b = inst->tok->token_bytes(id);
    out->data = b.data();
    out->len = b.size();
  });
}

wo_status special_ids(const wo_tokenizer_instance *inst, wo_special_ids *out) {
  if (!inst || !out) return WO_ERR_INVALID_ARGUMENT;
  wo::write_sized(out, inst->tok->special_ids()); // only the fields the caller's struct has
  return WO_OK;
}

int32_t is_eog(const wo_tokenizer_instance *inst, int32_t id) {
  return inst && inst->tok->is_eog(id) ? 1 : 0;
}

int64_t vocab_size(const wo_tokenizer_instance *inst) { return inst ? inst->tok->vocab().size() : 0; }

const char *kind(const wo_tokenizer_instance *inst) { return inst ? inst->tok->kind() : ""; }

const char *last_error(const wo_tokenizer_instance *inst) {
  if (!inst) return create_error().c_str();
  return inst->error.c_str();
}

const wo_tokenizer_v1 kVtable = {
    sizeof(wo_tokenizer_v1),
    probe,
    create,
    destroy,
    encode,
    token_bytes,
    special_ids,
    is_eog,
    vocab_size,
    kind,
    last_error,
};

const wo_plugin kDescriptor = wo::make_descriptor(WO_PLUGIN_TOKENIZER, "tokenizer-bpe", "0.1.0", &kVtable);

const wo_plugin *entry(uint32_t host_major, uint32_t host_minor) {
  return wo::negotiate(&kDescriptor, host_major, host_minor);
}

} // namespace

WORKER_PLUGIN(entry)
