#include "weights.hpp"

#include <worker/ggml_types.hpp>

#include <string>

namespace wo::gpt {

namespace {

std::string shape_str(const wo_tensor &t) {
  std::string s = "[";
  for (uint32_t i = 0; i < t.n_dims && i < 4; ++i)
    s += (i ? ", " : "") + std::to_string(t.ne[i]);
  return s + "]";
}

std::string dims_str(std::initializer_list<int64_t> ne) {
  std::string s = "[";
  bool first = true;
  for (int64_t v : ne) {
    s += (first ? "" : ", ") + std::to_string(v);
    first = false;
  }
  return s + "]";
}

// Shape check ignoring trailing 1s, so a [n] vector stored as [n, 1] still fits.
bool shape_is(const wo_tensor &t, std::initializer_list<int64_t> ne) {
  int i = 0;
  for (int64_t v : ne) {
    const int64_t have = i < static_cast<int>(t.n_dims) ? t.ne[i] : 1;
    if (have != v) return false;
    ++i;
  }
  for (; i < static_cast<int>(t.n_dims) && i < 4; ++i)
    if (t.ne[i] != 1) return false;
  return true;
}

class Loader {
public:
  explicit Loader(const HostView &h) : h_(h) {}

  const wo_tensor *get(const std::string &name, std::initializer_list<int64_t> ne, bool need_f32,
                       bool optional = false) const {
    const wo_tensor *t = h_.tensor(name);
    if (!t) {
      if (optional) return nullptr;
      throw Error(WO_ERR_NOT_FOUND, "tensor '" + name +
                                        "' is required but absent from the model (expected shape " +
                                        dims_str(ne) + ")");
    }
    if (!shape_is(*t, ne))
      throw Error(WO_ERR_FORMAT,
                  "tensor '" + name + "': expected shape " + dims_str(ne) + ", found " + shape_str(*t));
    if (need_f32 && t->ggml_type != ggml::F32)
      throw Error(WO_ERR_UNSUPPORTED, "tensor '" + name +
                                          "': expected type F32 (read directly by kernels), found " +
                                          ggml_type_label(t->ggml_type));
    return t;
  }

private:
  static std::string ggml_type_label(uint32_t type) {
    const ggml::TypeInfo *info = ggml::type_info(type);
    return info ? info->name : "type id " + std::to_string(type);
  }
  const HostView &h_;
};

std::string blk(int64_t il, const char *suffix) { return "blk." + std::to_string(il) + "." + suffix; }

void load_gpt2_layer(const Loader &L, const Hparams &hp, int64_t il, LayerWeights &w) {
  const int64_t E = hp.n_embd, F = hp.n_ff;
  w.attn_norm = L.get(blk(il, "attn_norm.weight"), {E}, true);
  w.attn_norm_b = L.get(blk(il, "attn_norm.bias"), {E}, true);
  w.attn_qkv = L.get(blk(il, "attn_qkv.weight"), {E, 3 * E}, false);
  w.attn_qkv_b = L.get(blk(il, "attn_qkv.bias"), {3 * E}, true);
  w.attn_output = L.get(blk(il, "attn_output.weight"), {E, E}, false);
  w.attn_output_b = L.get(blk(il, "attn_output.bias"), {E}, true);
  w.ffn_norm = L.get(blk(il, "ffn_norm.weight"), {E}, true);
  w.ffn_norm_b = L.get(blk(il, "ffn_norm.bias"), {E}, true);
  w.ffn_up = L.get(blk(il, "ffn_up.weight"), {E, F}, false);
  w.ffn_up_b = L.get(blk(il, "ffn_up.bias"), {F}, true);
  w.ffn_down = L.get(blk(il, "ffn_down.weight"), {F, E}, false);
  w.ffn_down_b = L.get(blk(il, "ffn_down.bias"), {E}, true);
}

void load_gptoss_layer(const Loader &L, const Hparams &hp, int64_t il, LayerWeights &w) {
  const int64_t E = hp.n_embd, Q = hp.q_dim(), KV = hp.kv_dim(), F = hp.n_ff, X = hp.n_expert;
  w.attn_norm = L.get(blk(il, "attn_norm.weight"), {E}, true);
  w.attn_q = L.get(blk(il, "attn_q.weight"), {E, Q}, false);
  w.attn_q_b = L.get(blk(il, "attn_q.bias"), {Q}, true);
  w.attn_k = L.get(blk(il, "attn_k.weight"), {E, KV}, false);
  w.attn_k_b = L.get(blk(il, "attn_k.bias"), {KV}, true);
  w.attn_v = L.get(blk(il, "attn_v.weight"), {E, KV}, false);
  w.attn_v_b = L.get(blk(il, "attn_v.bias"), {KV}, true);
  w.attn_sinks = L.get(blk(il, "attn_sinks.weight"), {hp.n_head}, true);
  w.attn_output = L.get(blk(il, "attn_output.weight"), {Q, E}, false);
  w.attn_output_b = L.get(blk(il, "attn_output.bias"), {E}, true);
  w.post_attention_norm = L.get(blk(il, "post_attention_norm.weight"), {E}, true);
  w.ffn_gate_inp = L.get(blk(il, "ffn_gate_inp.weight"), {E, X}, false);
  w.ffn_gate_inp_b = L.get(blk(il, "ffn_gate_inp.bias"), {X}, true);
  w.ffn_gate_exps = L.get(blk(il, "ffn_gate_exps.weight"), {E, F, X}, false);
  w.ffn_gate_exps_b = L.get(blk(il, "ffn_gate_exps.bias"), {F, X}, true);
  w.ffn_up_exps = L.get(blk(il, "ffn_up_exps.weight"), {E, F, X}, false);
  w.ffn_up_exps_b = L.get(blk(il, "ffn_up_exps.bias"), {F, X}, true);
  w.ffn_down_exps = L.get(blk(il, "ffn_down_exps.weight"), {F, E, X}, false);
  w.ffn_down_exps_b = L.get(blk(il, "ffn_down_exps.bias"), {E, X}, true);
}

} // namespace

Weights load_weights(const HostView &host, const Hparams &hp) {
  Loader L(host);
  Weights w;
  const int64_t E = hp.n_embd;
  w.token_embd = L.get("token_embd.weight", {E, hp.n_vocab}, false);
  if (hp.family == Family::Gpt2) {
    w.position_embd = L.get("position_embd.weight", {E, hp.n_ctx_train}, false);
    w.output_norm_b = L.get("output_norm.bias", {E}, true);
  }
  w.output_norm = L.get("output_norm.weight", {E}, true);
  w.output = L.get("output.weight", {E, hp.n_vocab}, false, /*optional=*/true);
  w.tied_output = w.output == nullptr;
  if (w.tied_output) {
    if (hp.family == Family::GptOss)
      throw Error(WO_ERR_NOT_FOUND,
                  "tensor 'output.weight' is required for gpt-oss (its LM head is never tied) "
                  "but absent from the model");
    w.output = w.token_embd;
  }
  w.layers.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    if (hp.family == Family::Gpt2)
      load_gpt2_layer(L, hp, il, w.layers[static_cast<size_t>(il)]);
    else
      load_gptoss_layer(L, hp, il, w.layers[static_cast<size_t>(il)]);
  }
  return w;
}

} // namespace wo::gpt
