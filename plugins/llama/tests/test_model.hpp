// A tiny random llama-family model held in memory and served through a minimal wo_host, plus a
// double-precision CPU forward pass to compare the plugin against. Used by the CPU tests (tables,
// hyperparameters, plan, errors) and the GPU tests (forward vs reference).
#pragma once

#include <worker/sdk.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace wo::llama::test {

struct Spec {
  std::string arch = "llama"; // llama | qwen2 | phi3
  int64_t n_vocab = 150, n_embd = 64, n_layer = 2, n_ff = 96;
  int32_t n_head = 4, n_head_kv = 2, head_dim = 16, rope_dims = 0; // 0: head_dim
  float rope_base = 10000.0f, eps = 1e-5f;
  bool qkv_bias = false, tied = false, fused_qkv = false, fused_ffn = false, neox = false;
  std::string rope_scaling; // "", "linear", "yarn"
  float rope_factor = 1.0f;
  uint32_t seed = 1;

  static Spec llama();
  static Spec qwen2();
  static Spec phi3();
};

// F32 tensors with host copies (`host`) and a wo_tensor view each.
struct TensorData {
  wo_tensor t{};
  std::string name;
  std::vector<float> host;
  std::vector<int64_t> ne;
};

class TestModel {
public:
  explicit TestModel(const Spec &s);
  const Spec &spec() const { return spec_; }

  // Metadata the plugin reads (every value stored as the GGUF type a converter writes).
  struct Meta {
    wo_value_type type;
    uint64_t u;
    double f;
    std::string s;
  };
  std::map<std::string, Meta> meta;
  std::map<std::string, std::unique_ptr<TensorData>> tensors;

  void set_u32(const std::string &k, uint64_t v) { meta[k] = Meta{WO_VALUE_U32, v, 0, ""}; }
  void set_f32(const std::string &k, double v) { meta[k] = Meta{WO_VALUE_F32, 0, v, ""}; }
  void set_str(const std::string &k, const std::string &v) { meta[k] = Meta{WO_VALUE_STRING, 0, 0, v}; }
  void add(const std::string &name, std::vector<int64_t> ne, float sd, float mean = 0.0f);
  const std::vector<float> &w(const std::string &name) const { return tensors.at(name)->host; }
  bool has(const std::string &name) const { return tensors.count(name) != 0; }

  // The reference: logits [n_tokens][n_vocab] for tokens at positions 0..n-1, in double, with K
  // and V rounded to FP16 as the plugin's cache stores them.
  std::vector<double> reference_logits(const std::vector<int32_t> &tokens) const;

private:
  Spec spec_;
  std::mt19937 rng_;
};

// A wo_host over a TestModel. Device services are absent (NULL) unless a GPU test installs them.
class TestHost {
public:
  explicit TestHost(TestModel &m);
  const wo_host *host() const { return &h_; }
  wo_host &raw() { return h_; }
  TestModel &model() { return m_; }

private:
  static wo_status meta_get(void *ctx, const char *key, wo_value *out);
  static const wo_tensor *tensor(void *ctx, const char *name);
  TestModel &m_;
  wo_host h_{};
};

} // namespace wo::llama::test
