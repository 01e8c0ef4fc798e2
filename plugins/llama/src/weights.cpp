#include "weights.hpp"

#include <string>

namespace wo::llama {
namespace {

constexpr uint32_t kGgmlF32 = 0;

struct Binder {
  const HostView &host;
  bool require_device;

  std::string shape(const wo_tensor &t) const {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d)
      s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
  }

  // A matrix with rows of `cols` elements and `rows` rows (ggml order: ne0 = cols).
  const wo_tensor *matrix(const std::string &name, int64_t cols, int64_t rows, bool required = true) const {
    const wo_tensor *t = host.tensor(name);
    if (!t) {
      if (required)
        throw Error(WO_ERR_NOT_FOUND, "tensor '" + name + "' is required but absent from the model");
      return nullptr;
    }
    if (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows)
      throw Error(WO_ERR_FORMAT, "tensor '" + name + "': expected shape [" + std::to_string(cols) + ", " +
                                     std::to_string(rows) + "], found " + shape(*t));
    return device(t);
  }

  // A vector read directly by the kernels: F32, `n` elements.
  const wo_tensor *vec(const std::string &name, int64_t n, Need need) const {
    const wo_tensor *t = need == Need::Absent ? nullptr : host.tensor(name);
    if (!t) {
      if (need == Need::Required)
        throw Error(WO_ERR_NOT_FOUND, "tensor '" + name + "' is required but absent from the model");
      return nullptr;
    }
    if (t->n_dims != 1 || t->ne[0] != n)
      throw Error(WO_ERR_FORMAT,
                  "tensor '" + name + "': expected shape [" + std::to_string(n) + "], found " + shape(*t));
    if (t->ggml_type != kGgmlF32)
      throw Error(WO_ERR_UNSUPPORTED, "tensor '" + name + "': expected ggml type F32 (0), found type " +
                                          std::to_string(t->ggml_type));
    return device(t);
  }

  const wo_tensor *device(const wo_tensor *t) const {
    if (require_device && !t->data)
      throw Error(WO_ERR_NO_DEVICE, std::string("tensor '") + t->name + "' has no device copy");
    return t;
  }
};

} // namespace

Weights bind_weights(const HostView &host, const HParams &hp, bool require_device) {
  const ArchTable &a = *hp.arch;
  const Binder b{host, require_device};
  for (const char *name : a.unsupported)
    if (name && host.tensor(name))
      throw Error(WO_ERR_UNSUPPORTED,
                  std::string("tensor '") + name + "' is present: architecture '" + a.name +
                      "' with this RoPE variant is not supported by the llama plugin yet");
  Weights w;
  w.token_embd = b.matrix(a.token_embd, hp.n_embd, hp.n_vocab);
  w.output_norm = b.vec(a.output_norm, hp.n_embd, Need::Required);
  w.output = b.matrix(a.output, hp.n_embd, hp.n_vocab, /*required=*/false);
  w.tied_output = w.output == nullptr;
  if (w.tied_output) w.output = w.token_embd;

  const int64_t qd = hp.q_dim(), kvd = hp.kv_dim();
  for (int il = 0; il < hp.n_layer; ++il) {
    auto n = [&](const char *pattern) { return layer_name(pattern, il); };
    LayerWeights l;
    l.attn_norm = b.vec(n(a.attn_norm), hp.n_embd, Need::Required);
    if (a.qkv == QkvLayout::Fused) {
      l.qkv = b.matrix(n(a.attn_qkv), hp.n_embd, qd + 2 * kvd);
      l.qkv_bias = b.vec(n(a.attn_qkv_bias), qd + 2 * kvd, a.qkv_bias);
    } else {
      l.q = b.matrix(n(a.attn_q), hp.n_embd, qd);
      l.k = b.matrix(n(a.attn_k), hp.n_embd, kvd);
      l.v = b.matrix(n(a.attn_v), hp.n_embd, kvd);
      l.q_bias = b.vec(n(a.attn_q_bias), qd, a.qkv_bias);
      l.k_bias = b.vec(n(a.attn_k_bias), kvd, a.qkv_bias);
      l.v_bias = b.vec(n(a.attn_v_bias), kvd, a.qkv_bias);
    }
    l.o = b.matrix(n(a.attn_output), qd, hp.n_embd);
    l.o_bias = b.vec(n(a.attn_output_bias), hp.n_embd, a.output_bias);
    l.ffn_norm = b.vec(n(a.ffn_norm), hp.n_embd, Need::Required);
    if (a.ffn == FfnLayout::FusedGateUp) {
      l.up = b.matrix(n(a.ffn_up), hp.n_embd, 2 * hp.n_ff);
      if (l.up) {
        l.gate_half = wo::row_view(*l.up, 0, hp.n_ff);
        l.up_half = wo::row_view(*l.up, hp.n_ff, hp.n_ff);
      }
    } else {
      l.gate = b.matrix(n(a.ffn_gate), hp.n_embd, hp.n_ff);
      l.up = b.matrix(n(a.ffn_up), hp.n_embd, hp.n_ff);
    }
    l.down = b.matrix(n(a.ffn_down), hp.n_ff, hp.n_embd);
    w.layers.push_back(l);
  }
  return w;
}

} // namespace wo::llama
