#include "hparams.hpp"

#include <cmath>
#include <string>

namespace wo::llama {
namespace {

Error bad(const std::string &key, const std::string &expected, const std::string &found) {
  return Error(WO_ERR_FORMAT, "metadata key '" + key + "': expected " + expected + ", found " + found);
}

int64_t positive(const HostView &h, const std::string &key, int64_t max = INT32_MAX) {
  const int64_t v = h.get_int(key);
  if (v <= 0 || v > max) throw bad(key, "an integer in 1.." + std::to_string(max), std::to_string(v));
  return v;
}

} // namespace

HParams read_hparams(const HostView &h) {
  HParams hp;
  const std::string arch = h.get_str("general.architecture");
  hp.arch = find_arch(arch);
  if (!hp.arch)
    throw Error(WO_ERR_UNSUPPORTED,
                "general.architecture: expected llama, qwen2 or phi3, found '" + arch + "'");
  const ArchTable &t = *hp.arch;
  auto key = [&](const char *suffix) { return arch + "." + suffix; };

  hp.n_layer = positive(h, key(t.key_n_layer), 4096);
  hp.n_embd = positive(h, key(t.key_n_embd));
  hp.n_ff = positive(h, key(t.key_n_ff));
  hp.n_head = static_cast<int32_t>(positive(h, key(t.key_n_head), 65535));
  hp.n_head_kv = static_cast<int32_t>(h.has(key(t.key_n_head_kv)) ? positive(h, key(t.key_n_head_kv), 65535)
                                                                  : hp.n_head);
  if (hp.n_head % hp.n_head_kv != 0)
    throw bad(key(t.key_n_head_kv), "a divisor of head_count (" + std::to_string(hp.n_head) + ")",
              std::to_string(hp.n_head_kv));
  if (h.has(key(t.key_head_dim))) {
    hp.head_dim = static_cast<int32_t>(positive(h, key(t.key_head_dim), 256));
  } else {
    if (hp.n_embd % hp.n_head != 0)
      throw bad(key(t.key_n_embd), "a multiple of head_count (" + std::to_string(hp.n_head) + ")",
                std::to_string(hp.n_embd));
    hp.head_dim = static_cast<int32_t>(hp.n_embd / hp.n_head);
  }
  if (hp.head_dim > 256) throw bad(key(t.key_head_dim), "head dim <= 256", std::to_string(hp.head_dim));
  if (h.has(key(t.key_head_dim_v)) && h.get_int(key(t.key_head_dim_v)) != hp.head_dim)
    throw Error(WO_ERR_UNSUPPORTED, "metadata key '" + key(t.key_head_dim_v) + "': expected " +
                                        std::to_string(hp.head_dim) + " (equal to the key length), found " +
                                        std::to_string(h.get_int(key(t.key_head_dim_v))));
  hp.rms_eps = static_cast<float>(h.get_float(key(t.key_rms_eps), 1e-5));
  if (!(hp.rms_eps > 0.0f)) throw bad(key(t.key_rms_eps), "a positive float", std::to_string(hp.rms_eps));
  hp.n_ctx_train = h.get_int(key(t.key_n_ctx_train), 4096);
  if (t.use_sliding_window) hp.sliding_window = h.get_int(key(t.key_sliding_window), 0);

  RopeConfig &r = hp.rope;
  r.mode = t.rope;
  r.n_dims = static_cast<int32_t>(h.get_int(key(t.key_rope_dims), hp.head_dim));
  if (r.n_dims <= 0 || r.n_dims > hp.head_dim || r.n_dims % 2 != 0)
    throw bad(key(t.key_rope_dims), "an even count in 2.." + std::to_string(hp.head_dim),
              std::to_string(r.n_dims));
  r.freq_base = static_cast<float>(h.get_float(key(t.key_rope_base), 10000.0));
  if (!(r.freq_base > 0.0f)) throw bad(key(t.key_rope_base), "a positive float", std::to_string(r.freq_base));
  const std::string scaling = h.opt_str(key(t.key_rope_scaling_type)).value_or("none");
  const double factor = h.get_float(key(t.key_rope_scaling_factor), 0.0);
  if (scaling == "linear" || scaling == "yarn") {
    if (factor > 0.0) r.freq_scale = static_cast<float>(1.0 / factor);
    if (scaling == "yarn") {
      r.ext_factor = 1.0f;
      r.n_ctx_orig = static_cast<int32_t>(h.get_int(key(t.key_rope_scaling_orig_ctx), hp.n_ctx_train));
    }
  } else if (scaling != "none") {
    throw Error(WO_ERR_UNSUPPORTED, "metadata key '" + key(t.key_rope_scaling_type) +
                                        "': expected none, linear or yarn, found '" + scaling + "'");
  }
  if (r.n_ctx_orig == 0) r.n_ctx_orig = static_cast<int32_t>(hp.n_ctx_train);

  const wo_tensor &embd = h.require_tensor(t.token_embd);
  if (embd.ne[0] != hp.n_embd)
    throw Error(WO_ERR_FORMAT, std::string("tensor '") + t.token_embd + "': expected row length n_embd=" +
                                   std::to_string(hp.n_embd) + ", found " + std::to_string(embd.ne[0]));
  hp.n_vocab = embd.ne[1];
  if (hp.n_vocab <= 0)
    throw Error(WO_ERR_FORMAT, std::string("tensor '") + t.token_embd +
                                   "': expected a positive vocab size, found " + std::to_string(hp.n_vocab));
  return hp;
}

uint64_t scratch_bytes(const HParams &hp, int64_t n_batch) {
  const uint64_t n = static_cast<uint64_t>(n_batch > 0 ? n_batch : 1);
  const uint64_t qkv = hp.q_dim() + 2 * hp.kv_dim();
  const uint64_t floats = n * (3 * hp.n_embd   // x (residual), h (normed), o (projection out)
                               + qkv           // q, k, v
                               + hp.q_dim()    // attention output
                               + 3 * hp.n_ff); // gate, up, activation
  const uint64_t ints = 2 * n;                 // token ids, positions
  return floats * sizeof(float) + ints * sizeof(int32_t) + 16 * 256; // 256-byte alignment per buffer
}

} // namespace wo::llama
