// The reference forward pass of TestModel in double, written from the architecture notes (not
// from the plugin's code): RMSNorm, q/k/v (+bias), RoPE NORM/NEOX over rope dims with linear
// frequency scaling, causal GQA attention over an FP16-rounded K/V cache, SwiGLU FFN, LM head.
#include "test_model.hpp"

#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

namespace wo::llama::test {
namespace {

using Vec = std::vector<double>;

// y = W x for W stored [rows][cols] (ggml ne = [cols, rows]).
Vec matvec(const std::vector<float> &w, int64_t rows, int64_t cols, const Vec &x) {
  Vec y(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c)
      s += double(w[r * cols + c]) * x[c];
    y[r] = s;
  }
  return y;
}

Vec rmsnorm(const Vec &x, const std::vector<float> &w, double eps) {
  double ss = 0;
  for (double v : x)
    ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / x.size() + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = x[i] * inv * w[i];
  return y;
}

void rope_head(double *v, int64_t pos, int32_t n_dims, double base, double freq_scale, bool neox) {
  for (int32_t i = 0; i < n_dims / 2; ++i) {
    const double theta = freq_scale * pos * std::pow(base, -2.0 * i / n_dims);
    const int32_t a = neox ? i : 2 * i, b = neox ? i + n_dims / 2 : 2 * i + 1;
    const double x0 = v[a], x1 = v[b];
    v[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
    v[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
  }
}

double fp16(double v) { return __half2float(__float2half(static_cast<float>(v))); }

} // namespace

std::vector<double> TestModel::reference_logits(const std::vector<int32_t> &tokens) const {
  const Spec &s = spec_;
  const int64_t E = s.n_embd, HD = s.head_dim, QD = s.n_head * HD, KVD = s.n_head_kv * HD, T = tokens.size();
  const int32_t rot = s.rope_dims ? s.rope_dims : s.head_dim;
  const double freq_scale = s.rope_scaling == "linear" ? 1.0 / s.rope_factor : 1.0;
  std::vector<Vec> x(T);
  const auto &embd = w("token_embd.weight");
  for (int64_t t = 0; t < T; ++t)
    x[t] = Vec(embd.begin() + tokens[t] * E, embd.begin() + (tokens[t] + 1) * E);

  for (int64_t l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    std::vector<Vec> q(T), k(T), v(T);
    for (int64_t t = 0; t < T; ++t) {
      const Vec h = rmsnorm(x[t], w(p + "attn_norm.weight"), s.eps);
      if (s.fused_qkv) {
        const Vec qkv = matvec(w(p + "attn_qkv.weight"), QD + 2 * KVD, E, h);
        q[t] = Vec(qkv.begin(), qkv.begin() + QD);
        k[t] = Vec(qkv.begin() + QD, qkv.begin() + QD + KVD);
        v[t] = Vec(qkv.begin() + QD + KVD, qkv.end());
      } else {
        q[t] = matvec(w(p + "attn_q.weight"), QD, E, h);
        k[t] = matvec(w(p + "attn_k.weight"), KVD, E, h);
        v[t] = matvec(w(p + "attn_v.weight"), KVD, E, h);
      }
      if (s.qkv_bias) {
        for (int64_t i = 0; i < QD; ++i)
          q[t][i] += w(p + "attn_q.bias")[i];
        for (int64_t i = 0; i < KVD; ++i)
          k[t][i] += w(p + "attn_k.bias")[i], v[t][i] += w(p + "attn_v.bias")[i];
      }
      for (int32_t hh = 0; hh < s.n_head; ++hh)
        rope_head(&q[t][hh * HD], t, rot, s.rope_base, freq_scale, s.neox);
      for (int32_t hh = 0; hh < s.n_head_kv; ++hh)
        rope_head(&k[t][hh * HD], t, rot, s.rope_base, freq_scale, s.neox);
      for (auto &e : k[t])
        e = fp16(e); // the cache holds FP16
      for (auto &e : v[t])
        e = fp16(e);
    }
    for (int64_t t = 0; t < T; ++t) {
      Vec att(QD, 0.0);
      for (int32_t hh = 0; hh < s.n_head; ++hh) {
        const int32_t kh = hh / (s.n_head / s.n_head_kv);
        Vec sc(t + 1);
        double m = -1e300;
        for (int64_t j = 0; j <= t; ++j) {
          double d = 0;
          for (int64_t e = 0; e < HD; ++e)
            d += q[t][hh * HD + e] * k[j][kh * HD + e];
          sc[j] = d / std::sqrt(double(HD));
          m = std::max(m, sc[j]);
        }
        double den = 0;
        for (double &e : sc)
          den += (e = std::exp(e - m));
        for (int64_t j = 0; j <= t; ++j)
          for (int64_t e = 0; e < HD; ++e)
            att[hh * HD + e] += sc[j] / den * v[j][kh * HD + e];
      }
      const Vec o = matvec(w(p + "attn_output.weight"), E, QD, att);
      for (int64_t i = 0; i < E; ++i)
        x[t][i] += o[i];

      const Vec h = rmsnorm(x[t], w(p + "ffn_norm.weight"), s.eps);
      Vec g, u;
      if (s.fused_ffn) {
        const Vec gu = matvec(w(p + "ffn_up.weight"), 2 * s.n_ff, E, h);
        g = Vec(gu.begin(), gu.begin() + s.n_ff);
        u = Vec(gu.begin() + s.n_ff, gu.end());
      } else {
        g = matvec(w(p + "ffn_gate.weight"), s.n_ff, E, h);
        u = matvec(w(p + "ffn_up.weight"), s.n_ff, E, h);
      }
      Vec a(s.n_ff);
      for (int64_t i = 0; i < s.n_ff; ++i)
        a[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      const Vec dn = matvec(w(p + "ffn_down.weight"), E, s.n_ff, a);
      for (int64_t i = 0; i < E; ++i)
        x[t][i] += dn[i];
    }
  }
  const auto &out = s.tied ? w("token_embd.weight") : w("output.weight");
  std::vector<double> logits;
  logits.reserve(T * s.n_vocab);
  for (int64_t t = 0; t < T; ++t) {
    const Vec lt = matvec(out, s.n_vocab, E, rmsnorm(x[t], w("output_norm.weight"), s.eps));
    logits.insert(logits.end(), lt.begin(), lt.end());
  }
  return logits;
}

} // namespace wo::llama::test
