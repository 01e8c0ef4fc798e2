// A plain double-precision CPU forward pass of a SynthModel, written from the architecture
// description (not from the plugin), one token at a time with a KV cache: the yardstick for the
// plugin's GPU forward on the same weights. K and V are rounded to FP16 as they enter the cache,
// exactly like the plugin's FP16 KV cache, so the comparison measures everything else (a wrong
// layout, position, window, sink, clamp or routing weight) instead of the cache's precision.
#pragma once

#include "synth_model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace wo::gpt::testing {

struct ReferenceRun {
  std::vector<std::vector<float>> logits;                 // [token][n_vocab]
  std::vector<std::vector<std::vector<int32_t>>> experts; // [layer][token][k] (gpt-oss)
  std::vector<std::vector<double>> router_gap;            // [layer][token]: k-th minus (k+1)-th logit
  // The same for the router logits before their bias (what the fixtures' reference.json records).
  std::vector<std::vector<std::vector<int32_t>>> experts_prebias;
  std::vector<std::vector<double>> router_gap_prebias;
};

class ReferenceForward {
public:
  explicit ReferenceForward(const SynthModel &m) : m_(m) {}

  ReferenceRun run(const std::vector<int32_t> &tokens) const {
    ReferenceRun out;
    out.experts.resize(static_cast<size_t>(m_.n_layer));
    out.router_gap.resize(static_cast<size_t>(m_.n_layer));
    out.experts_prebias.resize(static_cast<size_t>(m_.n_layer));
    out.router_gap_prebias.resize(static_cast<size_t>(m_.n_layer));
    const size_t L = static_cast<size_t>(m_.n_layer);
    std::vector<std::vector<Vec>> kc(L), vc(L); // [layer][pos] K / V rows
    for (size_t p = 0; p < tokens.size(); ++p) {
      Vec x = row(m_.w("token_embd.weight"), tokens[p]);
      if (!m_.oss) add_into(x, row(m_.w("position_embd.weight"), static_cast<int64_t>(p)));
      for (size_t il = 0; il < L; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        if (m_.oss)
          oss_layer(b, il, static_cast<int64_t>(p), x, kc[il], vc[il], out);
        else
          gpt2_layer(b, x, kc[il], vc[il]);
      }
      const Vec h = m_.oss ? rms_norm(x, m_.w("output_norm.weight"))
                           : layer_norm(x, m_.w("output_norm.weight"), m_.w("output_norm.bias"));
      const Vec lg = matvec(m_.oss ? m_.w("output.weight") : m_.w("token_embd.weight"), h);
      out.logits.emplace_back(lg.begin(), lg.end());
    }
    return out;
  }

private:
  using Vec = std::vector<double>;

  // Round to the nearest IEEE half (ties to even), the value a __float2half_rn store keeps.
  static double to_half(double x) {
    if (x == 0.0 || !std::isfinite(x)) return x;
    int e = 0;
    std::frexp(x, &e);                     // |x| = m 2^e, 0.5 <= m < 1: leading bit 2^(e-1)
    const int lsb = std::max(e - 11, -24); // 11 significant bits; subnormal quantum 2^-24
    return std::nearbyint(std::ldexp(x, -lsb)) * std::ldexp(1.0, lsb);
  }
  static Vec to_half(Vec v) {
    for (double &x : v)
      x = to_half(x);
    return v;
  }

  static Vec row(const SynthTensor &t, int64_t r, int64_t matrix = 0) {
    const int64_t cols = t.ne[0], rows = t.ne.size() > 1 ? t.ne[1] : 1;
    Vec v(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c)
      v[static_cast<size_t>(c)] = t.data[static_cast<size_t>((matrix * rows + r) * cols + c)];
    return v;
  }
  static Vec vec(const SynthTensor &t) { return Vec(t.data.begin(), t.data.end()); }
  static void add_into(Vec &a, const Vec &b) {
    for (size_t i = 0; i < a.size(); ++i)
      a[i] += b[i];
  }
  // y = W x (+ expert `e` of a 3-D weight).
  static Vec matvec(const SynthTensor &w, const Vec &x, int64_t e = 0) {
    const int64_t cols = w.ne[0], rows = w.ne[1];
    Vec y(static_cast<size_t>(rows), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      const float *wr = &w.data[static_cast<size_t>((e * rows + r) * cols)];
      for (int64_t c = 0; c < cols; ++c)
        s += double(wr[c]) * x[static_cast<size_t>(c)];
      y[static_cast<size_t>(r)] = s;
    }
    return y;
  }
  Vec layer_norm(const Vec &x, const SynthTensor &w, const SynthTensor &b) const {
    const double n = double(x.size());
    const double mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
    double var = 0;
    for (double v : x)
      var += (v - mean) * (v - mean);
    var /= n;
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      y[i] = (x[i] - mean) / std::sqrt(var + m_.eps) * w.data[i] + b.data[i];
    return y;
  }
  Vec rms_norm(const Vec &x, const SynthTensor &w) const {
    double ss = 0;
    for (double v : x)
      ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / double(x.size()) + m_.eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      y[i] = x[i] * inv * w.data[i];
    return y;
  }

  // Softmax attention of one query head over keys [lo, hi), optional sink logit.
  static Vec attend(const double *q, const std::vector<Vec> &kc, const std::vector<Vec> &vc, int64_t kv_head,
                    int64_t hd, int64_t lo, int64_t hi, double scale, const double *sink) {
    std::vector<double> s;
    for (int64_t j = lo; j < hi; ++j) {
      double d = 0;
      for (int64_t i = 0; i < hd; ++i)
        d += q[i] * kc[static_cast<size_t>(j)][static_cast<size_t>(kv_head * hd + i)];
      s.push_back(d * scale);
    }
    double mx = sink ? *sink : -INFINITY;
    for (double v : s)
      mx = std::max(mx, v);
    double den = sink ? std::exp(*sink - mx) : 0.0;
    for (double &v : s)
      den += (v = std::exp(v - mx));
    Vec o(static_cast<size_t>(hd), 0.0);
    for (int64_t j = lo; j < hi; ++j)
      for (int64_t i = 0; i < hd; ++i)
        o[static_cast<size_t>(i)] += s[static_cast<size_t>(j - lo)] / den *
                                     vc[static_cast<size_t>(j)][static_cast<size_t>(kv_head * hd + i)];
    return o;
  }

  void gpt2_layer(const std::string &b, Vec &x, std::vector<Vec> &kc, std::vector<Vec> &vc) const {
    const int64_t E = m_.n_embd, hd = m_.head_dim;
    Vec h = layer_norm(x, m_.w(b + "attn_norm.weight"), m_.w(b + "attn_norm.bias"));
    Vec qkv = matvec(m_.w(b + "attn_qkv.weight"), h);
    add_into(qkv, vec(m_.w(b + "attn_qkv.bias")));
    kc.push_back(to_half(Vec(qkv.begin() + E, qkv.begin() + 2 * E)));
    vc.push_back(to_half(Vec(qkv.begin() + 2 * E, qkv.end())));
    const int64_t n = static_cast<int64_t>(kc.size());
    Vec att(static_cast<size_t>(E));
    for (int64_t hh = 0; hh < m_.n_head; ++hh) {
      const Vec o = attend(&qkv[static_cast<size_t>(hh * hd)], kc, vc, hh, hd, 0, n,
                           1.0 / std::sqrt(double(hd)), nullptr);
      std::copy(o.begin(), o.end(), att.begin() + hh * hd);
    }
    Vec o = matvec(m_.w(b + "attn_output.weight"), att);
    add_into(o, vec(m_.w(b + "attn_output.bias")));
    add_into(x, o);
    h = layer_norm(x, m_.w(b + "ffn_norm.weight"), m_.w(b + "ffn_norm.bias"));
    Vec u = matvec(m_.w(b + "ffn_up.weight"), h);
    add_into(u, vec(m_.w(b + "ffn_up.bias")));
    for (double &v : u)
      v = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    Vec d = matvec(m_.w(b + "ffn_down.weight"), u);
    add_into(d, vec(m_.w(b + "ffn_down.bias")));
    add_into(x, d);
  }

  // NEOX rotation with YaRN (ggml's formulation: ramp between interpolated and extrapolated
  // angles over the correction dims, magnitude 1 + 0.1 ln(factor)).
  void rope_yarn(double *v, int64_t n_heads, int64_t pos) const {
    const int64_t hd = m_.head_dim, half = hd / 2;
    const double fs = 1.0 / m_.rope_factor;
    auto corr = [&](double n_rot) {
      return double(hd) * std::log(double(m_.rope_orig_ctx) / (n_rot * 2.0 * M_PI)) /
             (2.0 * std::log(m_.rope_base));
    };
    const double lo = std::max(0.0, std::floor(corr(32.0))),
                 hi = std::min(double(hd - 1), std::ceil(corr(1.0)));
    const double mscale = 1.0 + 0.1 * std::log(1.0 / fs);
    for (int64_t h = 0; h < n_heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const double extrap = double(pos) * std::pow(m_.rope_base, -2.0 * double(i) / double(hd));
        const double ramp = 1.0 - std::min(1.0, std::max(0.0, (double(i) - lo) / std::max(0.001, hi - lo)));
        const double theta = extrap * fs * (1.0 - ramp) + extrap * ramp;
        double *a = v + h * hd + i, *c = v + h * hd + i + half;
        const double x0 = *a, x1 = *c;
        *a = (x0 * std::cos(theta) - x1 * std::sin(theta)) * mscale;
        *c = (x0 * std::sin(theta) + x1 * std::cos(theta)) * mscale;
      }
  }

  // The k largest logits in descending order (ties: lower index), and the k-th minus (k+1)-th gap.
  void top_k(const Vec &r, std::vector<std::vector<int32_t>> &ids, std::vector<double> &gap) const {
    const size_t K = static_cast<size_t>(m_.n_expert_used);
    std::vector<int32_t> order(r.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t c) { return r[size_t(a)] > r[size_t(c)]; });
    gap.push_back(order.size() > K ? r[size_t(order[K - 1])] - r[size_t(order[K])] : 1e9);
    order.resize(K);
    ids.push_back(order);
  }

  void oss_layer(const std::string &b, size_t il, int64_t pos, Vec &x, std::vector<Vec> &kc,
                 std::vector<Vec> &vc, ReferenceRun &out) const {
    const int64_t hd = m_.head_dim, group = m_.n_head / m_.n_head_kv;
    Vec h = rms_norm(x, m_.w(b + "attn_norm.weight"));
    Vec q = matvec(m_.w(b + "attn_q.weight"), h), k = matvec(m_.w(b + "attn_k.weight"), h),
        v = matvec(m_.w(b + "attn_v.weight"), h);
    add_into(q, vec(m_.w(b + "attn_q.bias")));
    add_into(k, vec(m_.w(b + "attn_k.bias")));
    add_into(v, vec(m_.w(b + "attn_v.bias")));
    rope_yarn(q.data(), m_.n_head, pos);
    rope_yarn(k.data(), m_.n_head_kv, pos);
    kc.push_back(to_half(k));
    vc.push_back(to_half(v));
    const int64_t lo = il % 2 == 0 ? std::max<int64_t>(0, pos - m_.sliding_window + 1) : 0;
    Vec att(static_cast<size_t>(m_.n_head * hd));
    for (int64_t hh = 0; hh < m_.n_head; ++hh) {
      const double sink = m_.w(b + "attn_sinks.weight").data[static_cast<size_t>(hh)];
      const Vec o = attend(&q[static_cast<size_t>(hh * hd)], kc, vc, hh / group, hd, lo, pos + 1,
                           1.0 / std::sqrt(double(hd)), &sink);
      std::copy(o.begin(), o.end(), att.begin() + hh * hd);
    }
    Vec o = matvec(m_.w(b + "attn_output.weight"), att);
    add_into(o, vec(m_.w(b + "attn_output.bias")));
    add_into(x, o);

    h = rms_norm(x, m_.w(b + "post_attention_norm.weight"));
    Vec r = matvec(m_.w(b + "ffn_gate_inp.weight"), h);
    top_k(r, out.experts_prebias[il], out.router_gap_prebias[il]);
    add_into(r, vec(m_.w(b + "ffn_gate_inp.bias")));
    top_k(r, out.experts[il], out.router_gap[il]);
    const std::vector<int32_t> &order = out.experts[il].back();
    double mx = r[size_t(order[0])], den = 0;
    for (int32_t e : order)
      den += std::exp(r[size_t(e)] - mx);
    for (int32_t e : order) {
      const double wt = std::exp(r[size_t(e)] - mx) / den;
      Vec g = matvec(m_.w(b + "ffn_gate_exps.weight"), h, e),
          u = matvec(m_.w(b + "ffn_up_exps.weight"), h, e);
      add_into(g, row(m_.w(b + "ffn_gate_exps.bias"), e));
      add_into(u, row(m_.w(b + "ffn_up_exps.bias"), e));
      Vec a(g.size());
      for (size_t i = 0; i < g.size(); ++i) {
        const double gc = std::min(g[i], 7.0), uc = std::min(std::max(u[i], -7.0), 7.0);
        a[i] = gc / (1.0 + std::exp(-1.702 * gc)) * (uc + 1.0);
      }
      Vec d = matvec(m_.w(b + "ffn_down_exps.weight"), a, e);
      add_into(d, row(m_.w(b + "ffn_down_exps.bias"), e));
      for (size_t i = 0; i < x.size(); ++i)
        x[i] += wt * d[i];
    }
  }

  const SynthModel &m_;
};

} // namespace wo::gpt::testing
