// Small random gpt2 / gpt-oss models in F32, held on the host: the input of the GPU forward
// tests and of their CPU reference (reference_forward.hpp). Weights follow the fixtures'
// recipe (N(0, (g/sqrt(fan_in))^2), norms U(0.7, 1.3), biases N(0, 0.2^2)) so activations have
// realistic ranges and no value is zero.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace wo::gpt::testing {

struct SynthTensor {
  std::vector<int64_t> ne; // ggml order: ne[0] = row length
  std::vector<float> data;
  float at(int64_t r, int64_t c) const { return data[static_cast<size_t>(r * ne[0] + c)]; }
};

struct SynthModel {
  bool oss = false;
  int64_t n_vocab = 0, n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
  int64_t n_ctx_train = 0, n_expert = 0, n_expert_used = 0, sliding_window = 0;
  double eps = 1e-5, rope_base = 150000.0, rope_factor = 32.0;
  int64_t rope_orig_ctx = 4096;
  std::map<std::string, SynthTensor> t;
  const SynthTensor &w(const std::string &name) const { return t.at(name); }
};

class SynthBuilder {
public:
  explicit SynthBuilder(uint32_t seed) : rng_(seed) {}

  SynthModel gpt2() {
    SynthModel m;
    m.n_vocab = 96, m.n_embd = 64, m.n_layer = 2, m.n_head = 2, m.n_head_kv = 2, m.head_dim = 32,
    m.n_ff = 128;
    m.n_ctx_train = 64;
    const int64_t E = m.n_embd, F = m.n_ff;
    m.t["token_embd.weight"] = normal({E, m.n_vocab}, 1.0);
    m.t["position_embd.weight"] = normal({E, m.n_ctx_train}, 0.5);
    m.t["output_norm.weight"] = uniform({E});
    m.t["output_norm.bias"] = normal({E}, 0.2);
    for (int64_t il = 0; il < m.n_layer; ++il) {
      const std::string b = "blk." + std::to_string(il) + ".";
      m.t[b + "attn_norm.weight"] = uniform({E});
      m.t[b + "attn_norm.bias"] = normal({E}, 0.2);
      m.t[b + "attn_qkv.weight"] = normal({E, 3 * E}, 1.5 / std::sqrt(double(E)));
      m.t[b + "attn_qkv.bias"] = normal({3 * E}, 0.2);
      m.t[b + "attn_output.weight"] = normal({E, E}, 2.5 / std::sqrt(double(E)));
      m.t[b + "attn_output.bias"] = normal({E}, 0.2);
      m.t[b + "ffn_norm.weight"] = uniform({E});
      m.t[b + "ffn_norm.bias"] = normal({E}, 0.2);
      m.t[b + "ffn_up.weight"] = normal({E, F}, 1.0 / std::sqrt(double(E)));
      m.t[b + "ffn_up.bias"] = normal({F}, 0.2);
      m.t[b + "ffn_down.weight"] = normal({F, E}, 3.0 / std::sqrt(double(F)));
      m.t[b + "ffn_down.bias"] = normal({E}, 0.2);
    }
    return m;
  }

  // sliding_window is small so that prompts longer than it exercise the window.
  SynthModel gptoss() {
    SynthModel m;
    m.oss = true;
    m.n_vocab = 80, m.n_embd = 32, m.n_layer = 3, m.n_head = 4, m.n_head_kv = 2, m.head_dim = 64, m.n_ff = 64;
    m.n_ctx_train = 131072, m.n_expert = 8, m.n_expert_used = 4, m.sliding_window = 5;
    const int64_t E = m.n_embd, F = m.n_ff, Q = m.n_head * m.head_dim, KV = m.n_head_kv * m.head_dim,
                  X = m.n_expert;
    m.t["token_embd.weight"] = normal({E, m.n_vocab}, 1.0);
    m.t["output_norm.weight"] = uniform({E});
    m.t["output.weight"] = normal({E, m.n_vocab}, 2.0 / std::sqrt(double(E)));
    for (int64_t il = 0; il < m.n_layer; ++il) {
      const std::string b = "blk." + std::to_string(il) + ".";
      m.t[b + "attn_norm.weight"] = uniform({E});
      m.t[b + "attn_q.weight"] = normal({E, Q}, 1.5 / std::sqrt(double(E)));
      m.t[b + "attn_q.bias"] = normal({Q}, 0.2);
      m.t[b + "attn_k.weight"] = normal({E, KV}, 1.5 / std::sqrt(double(E)));
      m.t[b + "attn_k.bias"] = normal({KV}, 0.2);
      m.t[b + "attn_v.weight"] = normal({E, KV}, 1.0 / std::sqrt(double(E)));
      m.t[b + "attn_v.bias"] = normal({KV}, 0.2);
      m.t[b + "attn_sinks.weight"] = normal({m.n_head}, 1.0);
      m.t[b + "attn_output.weight"] = normal({Q, E}, 2.5 / std::sqrt(double(Q)));
      m.t[b + "attn_output.bias"] = normal({E}, 0.2);
      m.t[b + "post_attention_norm.weight"] = uniform({E});
      m.t[b + "ffn_gate_inp.weight"] = normal({E, X}, 2.0 / std::sqrt(double(E)));
      m.t[b + "ffn_gate_inp.bias"] = normal({X}, 0.2);
      // gate gets a larger spread so the clamps at +-7 are reached.
      m.t[b + "ffn_gate_exps.weight"] = normal({E, F, X}, 6.0 / std::sqrt(double(E)));
      m.t[b + "ffn_gate_exps.bias"] = normal({F, X}, 0.2);
      m.t[b + "ffn_up_exps.weight"] = normal({E, F, X}, 6.0 / std::sqrt(double(E)));
      m.t[b + "ffn_up_exps.bias"] = normal({F, X}, 0.2);
      m.t[b + "ffn_down_exps.weight"] = normal({F, E, X}, 1.0 / std::sqrt(double(F)));
      m.t[b + "ffn_down_exps.bias"] = normal({E, X}, 0.2);
    }
    return m;
  }

  std::vector<int32_t> tokens(const SynthModel &m, size_t n) {
    std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(m.n_vocab - 1));
    std::vector<int32_t> out(n);
    for (auto &v : out)
      v = d(rng_);
    return out;
  }

private:
  static size_t count(const std::vector<int64_t> &ne) {
    size_t n = 1;
    for (int64_t v : ne)
      n *= static_cast<size_t>(v);
    return n;
  }
  SynthTensor normal(std::vector<int64_t> ne, double sd) {
    std::normal_distribution<float> d(0.0f, static_cast<float>(sd));
    SynthTensor t{ne, std::vector<float>(count(ne))};
    for (auto &v : t.data)
      v = d(rng_);
    return t;
  }
  SynthTensor uniform(std::vector<int64_t> ne) {
    std::uniform_real_distribution<float> d(0.7f, 1.3f);
    SynthTensor t{ne, std::vector<float>(count(ne))};
    for (auto &v : t.data)
      v = d(rng_);
    return t;
  }
  std::mt19937 rng_;
};

} // namespace wo::gpt::testing
