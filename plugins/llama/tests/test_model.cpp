#include "test_model.hpp"

#include <cmath>
#include <cstring>

namespace wo::llama::test {

Spec Spec::llama() { return Spec{}; }

Spec Spec::qwen2() {
  Spec s;
  s.arch = "qwen2";
  s.n_head = 4, s.n_head_kv = 1, s.head_dim = 16;
  s.qkv_bias = true, s.tied = true, s.neox = true;
  s.rope_base = 1000000.0f;
  s.eps = 1e-6f;
  s.seed = 2;
  return s;
}

Spec Spec::phi3() {
  Spec s;
  s.arch = "phi3";
  s.n_embd = 96, s.n_head = 2, s.n_head_kv = 2, s.head_dim = 48, s.rope_dims = 32;
  s.fused_qkv = true, s.fused_ffn = true, s.neox = true;
  s.seed = 3;
  return s;
}

void TestModel::add(const std::string &name, std::vector<int64_t> ne, float sd, float mean) {
  auto td = std::make_unique<TensorData>();
  td->name = name;
  td->ne = ne;
  int64_t n = 1;
  for (int64_t d : ne)
    n *= d;
  std::normal_distribution<float> dist(mean, sd);
  td->host.resize(n);
  for (float &v : td->host)
    v = dist(rng_);
  td->t.struct_size = sizeof(wo_tensor);
  td->t.ggml_type = 0; // F32
  td->t.name = td->name.c_str();
  td->t.n_dims = static_cast<uint32_t>(ne.size());
  for (size_t d = 0; d < 4; ++d)
    td->t.ne[d] = d < ne.size() ? ne[d] : 1;
  td->t.nbytes = n * sizeof(float);
  td->t.nb1 = ne[0] * sizeof(float);
  td->t.host_data = td->host.data();
  tensors[name] = std::move(td);
}

TestModel::TestModel(const Spec &s) : spec_(s), rng_(s.seed) {
  const std::string a = s.arch + ".";
  set_str("general.architecture", s.arch);
  set_u32(a + "block_count", s.n_layer);
  set_u32(a + "embedding_length", s.n_embd);
  set_u32(a + "feed_forward_length", s.n_ff);
  set_u32(a + "attention.head_count", s.n_head);
  set_u32(a + "attention.head_count_kv", s.n_head_kv);
  set_u32(a + "context_length", 2048);
  set_f32(a + "attention.layer_norm_rms_epsilon", s.eps);
  set_f32(a + "rope.freq_base", s.rope_base);
  if (s.head_dim * s.n_head != s.n_embd) set_u32(a + "attention.key_length", s.head_dim);
  if (s.rope_dims) set_u32(a + "rope.dimension_count", s.rope_dims);
  if (!s.rope_scaling.empty()) {
    set_str(a + "rope.scaling.type", s.rope_scaling);
    set_f32(a + "rope.scaling.factor", s.rope_factor);
  }
  if (s.arch == "phi3") set_u32(a + "attention.sliding_window", 2047); // present, ignored (as llama.cpp)

  const int64_t E = s.n_embd, QD = int64_t(s.n_head) * s.head_dim, KVD = int64_t(s.n_head_kv) * s.head_dim;
  const float in_sd = 1.0f / std::sqrt(float(E));
  add("token_embd.weight", {E, s.n_vocab}, 1.0f);
  add("output_norm.weight", {E}, 0.1f, 1.0f);
  if (!s.tied) add("output.weight", {E, s.n_vocab}, 2.0f * in_sd);
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {E}, 0.1f, 1.0f);
    if (s.fused_qkv) {
      add(p + "attn_qkv.weight", {E, QD + 2 * KVD}, 1.5f * in_sd);
    } else {
      add(p + "attn_q.weight", {E, QD}, 1.5f * in_sd);
      add(p + "attn_k.weight", {E, KVD}, 1.5f * in_sd);
      add(p + "attn_v.weight", {E, KVD}, in_sd);
    }
    if (s.qkv_bias) {
      add(p + "attn_q.bias", {QD}, 0.2f);
      add(p + "attn_k.bias", {KVD}, 0.2f);
      add(p + "attn_v.bias", {KVD}, 0.2f);
    }
    add(p + "attn_output.weight", {QD, E}, 2.5f / std::sqrt(float(QD)));
    add(p + "ffn_norm.weight", {E}, 0.1f, 1.0f);
    if (s.fused_ffn) {
      add(p + "ffn_up.weight", {E, 2 * s.n_ff}, in_sd);
    } else {
      add(p + "ffn_gate.weight", {E, s.n_ff}, in_sd);
      add(p + "ffn_up.weight", {E, s.n_ff}, in_sd);
    }
    add(p + "ffn_down.weight", {s.n_ff, E}, 3.0f / std::sqrt(float(s.n_ff)));
  }
}

TestHost::TestHost(TestModel &m) : m_(m) {
  h_.struct_size = sizeof(wo_host);
  h_.abi_major = WORKER_SDK_ABI_MAJOR;
  h_.abi_minor = WORKER_SDK_ABI_MINOR;
  h_.ctx = this;
  h_.meta_get = meta_get;
  h_.tensor = tensor;
}

wo_status TestHost::meta_get(void *ctx, const char *key, wo_value *out) {
  auto &m = static_cast<TestHost *>(ctx)->m_;
  auto it = m.meta.find(key);
  if (it == m.meta.end()) return WO_ERR_NOT_FOUND;
  const TestModel::Meta &v = it->second;
  std::memset(out, 0, sizeof *out);
  out->struct_size = sizeof(wo_value);
  out->type = v.type;
  out->u64 = v.u;
  out->i64 = static_cast<int64_t>(v.u);
  out->f64 = v.f;
  out->str = wo_str{v.s.data(), v.s.size()};
  return WO_OK;
}

const wo_tensor *TestHost::tensor(void *ctx, const char *name) {
  auto &m = static_cast<TestHost *>(ctx)->m_;
  auto it = m.tensors.find(name);
  return it == m.tensors.end() ? nullptr : &it->second->t;
}

} // namespace wo::llama::test
