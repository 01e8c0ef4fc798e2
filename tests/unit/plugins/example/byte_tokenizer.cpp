// The README's "write a plugin" example, built and tested here so the walk-through stays true:
// a tokenizer with one token per byte, serving models whose tokenizer.ggml.model is "bytes".
#include <worker/sdk.hpp>

#include <algorithm>
#include <string>

namespace {
struct Tok { std::string error; };                        // instance state: only the last error
char kByte[256];                                          // token i stands for byte i
Tok *self(const wo_tokenizer_instance *t) { return (Tok *)t; }

int32_t probe(const wo_host *host, const wo_tokenizer_config *) {
  auto model = wo::HostView(host).find("tokenizer.ggml.model");  // metadata through the host
  return model && std::string(model->str.data, model->str.len) == "bytes" ? 10 : 0;
}
wo_status create(const wo_host *, const wo_tokenizer_config *, wo_tokenizer_instance **out) {
  for (int i = 0; i < 256; ++i) kByte[i] = (char)i;
  *out = (wo_tokenizer_instance *)new Tok();
  return WO_OK;
}
void destroy(wo_tokenizer_instance *t) { delete self(t); }
wo_status encode(wo_tokenizer_instance *t, const char *s, size_t len, uint32_t, int32_t *out,
                 size_t cap, size_t *n_out) {
  *n_out = len;
  if (len > cap) return self(t)->error = "need " + std::to_string(len) + " ids", WO_ERR_BUFFER_TOO_SMALL;
  std::transform(s, s + len, out, [](char c) { return (int32_t)(unsigned char)c; });
  return WO_OK;
}
wo_status token_bytes(const wo_tokenizer_instance *t, int32_t id, wo_str *out) {
  if (id < 0 || id > 255) return self(t)->error = "id " + std::to_string(id) + " not in [0, 256)", WO_ERR_INVALID_ARGUMENT;
  *out = {&kByte[id], 1};
  return WO_OK;
}
wo_status special_ids(const wo_tokenizer_instance *, wo_special_ids *out) {
  *out = {sizeof(wo_special_ids), -1, -1, -1, -1, -1, 0, 0};  // no BOS/EOS
  return WO_OK;
}
int32_t is_eog(const wo_tokenizer_instance *, int32_t) { return 0; }
int64_t vocab_size(const wo_tokenizer_instance *) { return 256; }
const char *kind(const wo_tokenizer_instance *) { return "bytes"; }
const char *last_error(const wo_tokenizer_instance *t) { return self(t)->error.c_str(); }

const wo_tokenizer_v1 kVtable = {sizeof(wo_tokenizer_v1), probe, create, destroy, encode, token_bytes,
                                 special_ids, is_eog, vocab_size, kind, last_error};
const wo_plugin kPlugin = wo::make_descriptor(WO_PLUGIN_TOKENIZER, "tokenizer-bytes", "0.1.0", &kVtable);
const wo_plugin *entry(uint32_t major, uint32_t minor) { return wo::negotiate(&kPlugin, major, minor); }
} // namespace

WORKER_PLUGIN(entry)
