// GPU numerics of a codec .so through the C ABI, on a minimal device host (stream, cuBLAS, scratch):
// linear (GEMV and GEMM paths) at the model shapes against an FP64 CPU reference on the exactly
// dequantized weights, gather_rows bit-exact, linear_id against per-expert linear, the fixture
// GEMV goldens, and the decode path's promises (no scratch call, CUDA-graph capturable).
// Skips without a CUDA device.
#include "plugin_under_test.hpp"
#include "quant_common/cuda_ops.hpp"
#include "quant_common/device_test_host.hpp"
#include "quant_common/random_blocks.hpp"
#include "quant_common/scalar_convert.hpp"
#include "quant_common/unit_gemv.cuh"
#include "test_util.hpp"

#include <worker/env_switch.hpp>
#include <worker/ggml_types.hpp>
#include <worker/kernels.hpp>
#include <worker/rms_norm.cuh>
#include <worker/sdk.hpp>
#include <worker/staged_x.cuh>

#include <cuda_fp16.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>

namespace wo::quant::testing {
namespace {

template <class T> class DeviceArray {
public:
  explicit DeviceArray(size_t n) : n_(n) {
    cuda_ok(cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  T *get() const { return p_; }
  void upload(const T *src, size_t n) {
    cuda_ok(cudaMemcpy(p_, src, n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  std::vector<T> download(size_t n) const {
    std::vector<T> v(n);
    cuda_ok(cudaMemcpy(v.data(), p_, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return v;
  }

private:
  T *p_ = nullptr;
  size_t n_;
};

// Row length the type can hold nearest to `cols` (896 -> 1024 and 2880 -> 2816 for 256-blocks).
int64_t valid_cols(uint32_t type, int64_t cols) {
  const int64_t b = wo::ggml::type_info(type)->block_elems;
  const int64_t down = cols / b * b, up = down + (cols % b ? b : 0);
  if (down == 0) return up;
  return (cols - down) < (up - cols) ? down : up;
}

wo_tensor make_tensor(uint32_t type, void *data, int64_t cols, int64_t rows, int64_t experts = 1) {
  wo_tensor t{};
  t.struct_size = sizeof t;
  t.ggml_type = type;
  t.name = "test.weight";
  t.n_dims = experts > 1 ? 3 : 2;
  t.ne[0] = cols;
  t.ne[1] = rows;
  t.ne[2] = experts;
  t.ne[3] = 1;
  t.nb1 = wo::ggml::row_bytes(type, cols);
  t.nbytes = t.nb1 * rows * experts;
  t.data = data;
  return t;
}

// Up to 256 rows (always the first and last) whose reference we compute.
std::vector<int64_t> sample_rows(int64_t rows, std::mt19937_64 &rng) {
  if (rows <= 256) {
    std::vector<int64_t> all(rows);
    for (int64_t i = 0; i < rows; ++i)
      all[i] = i;
    return all;
  }
  std::set<int64_t> s{0, rows - 1};
  while (s.size() < 256)
    s.insert(static_cast<int64_t>(rng() % rows));
  return {s.begin(), s.end()};
}

// ref[t][i] = sum_c w[i][c] * x[t][c] in FP64, threads over rows.
std::vector<double> reference(const std::vector<float> &w, int64_t k, const std::vector<float> &x, int64_t n,
                              int64_t cols) {
  std::vector<double> ref(static_cast<size_t>(n * k));
  const unsigned nth = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> th;
  for (unsigned j = 0; j < nth; ++j)
    th.emplace_back([&, j] {
      for (int64_t i = j; i < k; i += nth)
        for (int64_t t = 0; t < n; ++t) {
          double acc = 0;
          const float *wr = &w[i * cols], *xr = &x[t * cols];
          for (int64_t c = 0; c < cols; ++c)
            acc += static_cast<double>(wr[c]) * xr[c];
          ref[t * k + i] = acc;
        }
    });
  for (auto &t : th)
    t.join();
  return ref;
}

double rel_err(const std::vector<float> &y, int64_t rows, const std::vector<int64_t> &sample,
               const std::vector<double> &ref, int64_t n) {
  double num = 0, den = 0;
  const int64_t k = static_cast<int64_t>(sample.size());
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < k; ++i) {
      const double d = y[t * rows + sample[i]] - ref[t * k + i];
      num += d * d;
      den += ref[t * k + i] * ref[t * k + i];
    }
  return std::sqrt(num / std::max(den, 1e-300));
}

class GpuCodec : public ::testing::Test {
protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
    plugin = std::make_unique<LoadedCodec>();
    q = plugin->codec();
    ASSERT_NE(q, nullptr);
    ASSERT_NE(q->linear, nullptr) << "CUDA build without GPU entry points";
    dev = std::make_unique<DeviceTestHost>();
    seed = fresh_seed();
    rng.seed(seed);
    std::printf("[ seed     ] %llu (replay with WORKER_TEST_SEED)\n", static_cast<unsigned long long>(seed));
  }

  std::vector<float> dequant_rows(uint32_t type, const std::vector<uint8_t> &raw,
                                  const std::vector<int64_t> &rows, int64_t cols) {
    const uint64_t rb = wo::ggml::row_bytes(type, cols);
    std::vector<float> w(rows.size() * cols);
    for (size_t i = 0; i < rows.size(); ++i)
      EXPECT_EQ(q->dequantize_rows(type, raw.data() + rows[i] * rb, 1, cols, &w[i * cols]), WO_OK)
          << q->last_error();
    return w;
  }

  // linear_id over n tokens (x: [n][x_slots][cols] floats, ids: [n][slots]) -> y [n][slots][rows].
  std::vector<float> linear_id_host(const wo_tensor &t, const std::vector<float> &xf,
                                    const std::vector<int32_t> &ids, int64_t n, int64_t x_slots,
                                    int64_t slots, int64_t rows) {
    DeviceArray<float> x(xf.size()), y(n * slots * rows);
    DeviceArray<int32_t> dids(ids.size());
    x.upload(xf.data(), xf.size());
    dids.upload(ids.data(), ids.size());
    EXPECT_EQ(q->linear_id(dev->host(), &t, x.get(), WO_DTYPE_F32, x_slots, y.get(), WO_DTYPE_F32, n,
                           dids.get(), slots),
              WO_OK)
        << q->last_error();
    dev->sync();
    return y.download(n * slots * rows);
  }

  std::unique_ptr<LoadedCodec> plugin;
  const wo_quant_v1 *q = nullptr;
  std::unique_ptr<DeviceTestHost> dev;
  uint64_t seed = 0;
  std::mt19937_64 rng;
};

struct ShapeCase {
  int64_t rows, cols;
};
// {32, 2880}: GPT-OSS's router (F32); plain types with few rows run one CTA per row.
const ShapeCase kShapes[] = {{896, 896},   {4864, 896},  {896, 4864}, {151936, 896},
                             {2880, 2880}, {4096, 4096}, {32, 2880}};
const int64_t kTokens[] = {1, 3, 7, 64, 512}; // 3: the multi-token GEMV; 7 and up: cuBLAS
constexpr double kLinearTol = 2e-3;
// One-token GEMVs of the block types run on int8 activations (act_terms()). With one term
// (WORKER_ACT_TERMS=1, llama.cpp's q8_1) each activation is rounded to a step of amax/127 of its
// 32: on normal x (amax ~2.3 sigma) an rms error of ~2.3 / (127 sqrt 12) ~ 5e-3 sigma, ~5e-3
// relative error in a dot with zero-mean weights (MXFP4 measured 4.8-5.6e-3); the types with a
// min or offset (Q4_1, Q5_1, Q4_K, Q5_K) keep the weights' mean in the dot and measured up to
// 1.5e-2 (Q5_1 4864x896) and 1.9e-2 (a Q5_K linear_id slot of 1032 rows) on the H100. The limit
// is twice the worst. Two terms: kLinearTol.
constexpr double kOneTermTol = 4e-2;
double linear_tol(uint32_t type, bool one_token) {
  const bool block_type = wo::ggml::type_info(type)->block_elems != 1;
  return block_type && one_token && wo::quant::dev::act_terms() == 1 ? kOneTermTol : kLinearTol;
}
// The GEMV variant the codec runs when it is not the default one (5) or variant 3, the two with
// the one-launch paths; null otherwise.
const char *non_default_gemv() {
  const char *v = std::getenv("WORKER_QUANT_GEMV");
  return v && std::string(v) != "3" && std::string(v) != "5" ? v : nullptr;
}

// linear_fused's norm against the norm kernel and the projection apart. The int8 GEMVs scale their
// dots by 1/rms (gemv_common.cuh, norm_late): the same value up to float rounding, a few of the
// staged terms rounding the other way (one lo step is 1/32258 of its group's largest value). H100:
// at most 7.5e-6 and 9.9e-6 relative L2 over every type and shape here in two runs (fresh inputs
// each), but 5.03e-5 in one run of many (2026-11-28: every row reads the same staged x, so a few
// flipped terms move all rows alike); held to 2e-4, four times that and still a tenth of the int8
// GEMV's own allowance against FP64 (kLinearTol, ~2e-5 typical). With WORKER_NORM_LATE=0 the
// GEMVs stage the normalized row and the bits are the separate steps'.
constexpr double kNormFoldTolerance = 2e-4;
bool norm_fold_exact() { return wo::env_int("WORKER_NORM_LATE", 0, 1, 1) == 0; }
double norm_fold_worst = 0.0; // the largest error expect_norm_fold saw (printed by its tests)
void expect_norm_fold(const std::vector<float> &got, const std::vector<float> &apart,
                      const std::string &what) {
  if (norm_fold_exact()) {
    EXPECT_EQ(got, apart) << what;
    return;
  }
  ASSERT_EQ(got.size(), apart.size()) << what;
  const double err = rel_l2(got.data(), apart.data(), got.size());
  norm_fold_worst = std::max(norm_fold_worst, err);
  EXPECT_LE(err, kNormFoldTolerance) << what;
}
void print_norm_fold_worst() {
  std::printf("[ norm fold] %s, worst rel-L2 against the separate steps %.3e\n",
              norm_fold_exact() ? "normalized row staged (bit for bit)" : "dots scaled by 1/rms",
              norm_fold_worst);
  norm_fold_worst = 0.0;
}

// Whether the one-token GEMV of a rows x cols weight of `type` is variant 5's whole-block kernel
// (unit_gemv.cuh: its types, from kUnitMinBytes up); the tests name the kernel they checked.
bool unit_gemv_weight(uint32_t type, int64_t rows, int64_t cols) {
  const char *v = std::getenv("WORKER_QUANT_GEMV");
  if (v && std::string(v) == "3") return false;
  if (static_cast<uint64_t>(rows) * wo::ggml::row_bytes(type, cols) < wo::quant::dev::kUnitMinBytes)
    return false;
  // see unit_weight: Q6_K rows of no 8-byte multiple only on the tiled grid (runs of whole 16 bytes)
  if (type == wo::ggml::Q6_K && wo::ggml::row_bytes(type, cols) % 8 != 0 &&
      (!wo::quant::dev::unit_tiled_enabled() || wo::quant::dev::act_terms() != 2 ||
       rows % wo::quant::dev::rows_of_16_bytes(wo::ggml::row_bytes(type, cols)) != 0))
    return false;
  for (uint32_t t :
       {wo::ggml::Q4_K, wo::ggml::Q5_K, wo::ggml::Q6_K, wo::ggml::Q8_0, wo::ggml::Q5_0, wo::ggml::MXFP4})
    if (t == type) return true;
  return false;
}

// The weights of the one-launch tests: small ones (variant 3's side of kUnitMinBytes) and large
// ones (variant 5's, for its types), each with a row count that leaves a partial CTA or group.
struct LaunchCase {
  int64_t cols;
  int64_t rows[3];
};
// 1280 columns: Q6_K rows of 1050 bytes (no 8-byte multiple: the unit GEMV only on the tiled grid).
// Qwen2.5-0.5B's q/k/v (896 + 128 + 128 rows of 896: 144 eight-warp CTAs, more than an H100's 132
// SMs, so a stack on the int8x GEMV runs 9-warp CTAs, one per SM) and 1160 rows of the same kind.
const LaunchCase kLaunchCases[] = {
    {896, {896, 128, 128}}, {896, {896, 128, 136}}, {2048, {2048, 1024, 1032}}, {1280, {1000, 1008, 1016}}};

// A one-launch stack of these weights declines (and the engine runs the linears apart): Q6_K weights
// whose rows are no 8-byte multiple take the unit GEMV only on the tiled grid, which takes no stack.
bool stack_declines(uint32_t type, int64_t cols, std::initializer_list<int64_t> rows) {
  if (type != wo::ggml::Q6_K || wo::ggml::row_bytes(type, cols) % 8 == 0) return false;
  for (int64_t r : rows)
    if (unit_gemv_weight(type, r, cols)) return true;
  return false;
}

TEST_F(GpuCodec, LinearMatchesFp64ReferenceAtModelShapes) {
  for (uint32_t type : kPlugin.types) {
    for (const auto &s : kShapes) {
      const int64_t cols = valid_cols(type, s.cols), rows = s.rows;
      const auto raw = random_blocks(type, rows, cols, rng());
      DeviceArray<uint8_t> w(raw.size());
      w.upload(raw.data(), raw.size());
      const wo_tensor t = make_tensor(type, w.get(), cols, rows);
      ASSERT_EQ(q->check_tensor(&t), WO_OK) << q->last_error();
      const auto sample = sample_rows(rows, rng);
      const auto wref = dequant_rows(type, raw, sample, cols);
      const auto xall = normal_floats(static_cast<size_t>(512 * cols), rng());
      DeviceArray<float> x(xall.size()), y(static_cast<size_t>(512 * rows));
      x.upload(xall.data(), xall.size());
      for (int64_t n : kTokens) {
        ASSERT_EQ(q->linear(dev->host(), &t, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, n), WO_OK)
            << q->last_error();
        dev->sync();
        const auto yh = y.download(static_cast<size_t>(n * rows));
        const std::vector<float> xn(xall.begin(), xall.begin() + n * cols);
        const double err = rel_err(yh, rows, sample, reference(wref, sample.size(), xn, n, cols), n);
        std::printf("[ linear   ] %-5s %6lldx%-5lld n=%-3lld rel_l2=%.3e%s\n", wo::ggml::type_name(type),
                    static_cast<long long>(rows), static_cast<long long>(cols), static_cast<long long>(n),
                    err, cols != s.cols ? " (row length adjusted to the block size)" : "");
        EXPECT_LE(err, linear_tol(type, n == 1))
            << wo::ggml::type_name(type) << " " << rows << "x" << cols << " n=" << n;
      }
    }
  }
}

TEST_F(GpuCodec, HalfActivationsAndOutputs) {
  for (uint32_t type : kPlugin.types) {
    const int64_t rows = 896, cols = valid_cols(type, 4864);
    const auto raw = random_blocks(type, rows, cols, rng());
    DeviceArray<uint8_t> w(raw.size());
    w.upload(raw.data(), raw.size());
    const wo_tensor t = make_tensor(type, w.get(), cols, rows);
    const auto sample = sample_rows(rows, rng);
    const auto wref = dequant_rows(type, raw, sample, cols);
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{64}}) {
      auto xf = normal_floats(static_cast<size_t>(n * cols), rng());
      std::vector<uint16_t> xh(xf.size());
      for (size_t i = 0; i < xf.size(); ++i) {
        xh[i] = float_to_half(xf[i]);
        xf[i] = half_to_float(xh[i]); // the reference sees exactly what the kernel reads
      }
      DeviceArray<uint16_t> x(xh.size()), y(static_cast<size_t>(n * rows));
      x.upload(xh.data(), xh.size());
      ASSERT_EQ(q->linear(dev->host(), &t, x.get(), WO_DTYPE_F16, y.get(), WO_DTYPE_F16, n), WO_OK)
          << q->last_error();
      dev->sync();
      const auto yh = y.download(static_cast<size_t>(n * rows));
      std::vector<float> yf(yh.size());
      for (size_t i = 0; i < yh.size(); ++i)
        yf[i] = half_to_float(yh[i]);
      const double err = rel_err(yf, rows, sample, reference(wref, sample.size(), xf, n, cols), n);
      EXPECT_LE(err, linear_tol(type, n == 1)) << wo::ggml::type_name(type) << " F16 x/y n=" << n;
    }
  }
}

TEST_F(GpuCodec, GatherRowsIsExact) {
  for (uint32_t type : kPlugin.types) {
    for (int64_t cols : {int64_t{1024}, int64_t{100}}) {
      if (!wo::ggml::is_row_valid(type, cols)) continue; // 100 only for the plain types (scalar path)
      const int64_t rows = 300, n = 37;
      const auto raw = random_blocks(type, rows, cols, rng());
      DeviceArray<uint8_t> w(raw.size());
      w.upload(raw.data(), raw.size());
      const wo_tensor t = make_tensor(type, w.get(), cols, rows);
      std::vector<int32_t> ids(n);
      for (auto &i : ids)
        i = static_cast<int32_t>(rng() % rows);
      ids[0] = 0;
      ids[1] = rows - 1;
      ids[2] = ids[3];
      DeviceArray<int32_t> dids(n);
      dids.upload(ids.data(), n);
      DeviceArray<float> out32(n * cols);
      DeviceArray<uint16_t> out16(n * cols);
      ASSERT_EQ(q->gather_rows(dev->host(), &t, dids.get(), n, out32.get(), WO_DTYPE_F32), WO_OK)
          << q->last_error();
      ASSERT_EQ(q->gather_rows(dev->host(), &t, dids.get(), n, out16.get(), WO_DTYPE_F16), WO_OK)
          << q->last_error();
      dev->sync();
      const auto g32 = out32.download(n * cols);
      const auto g16 = out16.download(n * cols);
      std::vector<int64_t> rows64(ids.begin(), ids.end());
      const auto want = dequant_rows(type, raw, rows64, cols);
      size_t bad32 = 0, bad16 = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        bad32 += float_to_bits(g32[i]) != float_to_bits(want[i]);
        bad16 += g16[i] != float_to_half(want[i]);
      }
      EXPECT_EQ(bad32, 0u) << wo::ggml::type_name(type) << " cols=" << cols
                           << ": F32 gather differs from CPU";
      EXPECT_EQ(bad16, 0u) << wo::ggml::type_name(type) << " cols=" << cols
                           << ": F16 gather differs from CPU";
    }
  }
}

TEST_F(GpuCodec, PlainTypesWithOddRowLengths) {
  for (uint32_t type : kPlugin.types) {
    if (wo::ggml::type_info(type)->block_elems != 1) continue;
    const int64_t rows = 130, cols = 100;
    const auto raw = random_blocks(type, rows, cols, rng());
    DeviceArray<uint8_t> w(raw.size());
    w.upload(raw.data(), raw.size());
    const wo_tensor t = make_tensor(type, w.get(), cols, rows);
    const auto sample = sample_rows(rows, rng);
    const auto wref = dequant_rows(type, raw, sample, cols);
    for (int64_t n : {int64_t{1}, int64_t{20}}) {
      const auto xf = normal_floats(static_cast<size_t>(n * cols), rng());
      DeviceArray<float> x(xf.size()), y(n * rows);
      x.upload(xf.data(), xf.size());
      ASSERT_EQ(q->linear(dev->host(), &t, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, n), WO_OK)
          << q->last_error();
      dev->sync();
      const double err =
          rel_err(y.download(n * rows), rows, sample, reference(wref, sample.size(), xf, n, cols), n);
      EXPECT_LE(err, 1e-5) << wo::ggml::type_name(type) << " n=" << n;
    }
  }
}

TEST_F(GpuCodec, LinearIdMatchesPerExpertLinear) {
  for (uint32_t type : kPlugin.types) {
    const int64_t cols = valid_cols(type, 2880), rows = 300, experts = 8,
                  slots = 4; // 300: a partial row tile
    const auto raw = random_blocks(type, rows * experts, cols, rng());
    DeviceArray<uint8_t> w(raw.size());
    w.upload(raw.data(), raw.size());
    const wo_tensor t = make_tensor(type, w.get(), cols, rows, experts);
    ASSERT_EQ(q->check_tensor(&t), WO_OK) << q->last_error();
    std::vector<std::vector<float>> expert_w; // dequantized on the CPU, the reference's weights
    for (int64_t e = 0; e < experts; ++e) {
      std::vector<int64_t> all(rows);
      for (int64_t r = 0; r < rows; ++r)
        all[r] = e * rows + r;
      expert_w.push_back(dequant_rows(type, raw, all, cols));
    }
    // n = 1, 5: the GEMV path, identical to per-expert linear. n = 40 (>= kGroupedMinTokens): problems
    // grouped by expert into FP16 tensor-core tiles, so only the FP64 tolerance applies; one id is
    // out of range there and its slot must come back NaN while every other slot stays right.
    for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{40}}) {
      const bool grouped = n >= wo::quant::kGroupedMinTokens;
      for (int64_t x_slots : {int64_t{1}, slots}) {
        std::vector<int32_t> ids(n * slots);
        for (auto &e : ids)
          e = static_cast<int32_t>(rng() % experts);
        const int64_t bad = grouped ? static_cast<int64_t>(rng() % ids.size()) : -1;
        if (bad >= 0) ids[bad] = static_cast<int32_t>(experts); // one past the last expert
        const auto xf = normal_floats(static_cast<size_t>(n * x_slots * cols), rng());
        const auto yh = linear_id_host(t, xf, ids, n, x_slots, slots, rows);
        ASSERT_FALSE(HasFailure());
        DeviceArray<float> x(xf.size()), y1(rows); // per-expert linear on the same activations
        x.upload(xf.data(), xf.size());
        for (int64_t tk = 0; tk < n * slots; ++tk) {
          if (tk == bad) {
            for (int64_t r = 0; r < rows; ++r)
              ASSERT_TRUE(std::isnan(yh[tk * rows + r]))
                  << wo::ggml::type_name(type) << " slot " << tk << " has the invalid expert id " << experts;
            continue;
          }
          const int64_t tok = tk / slots, k = tk % slots, e = ids[tk];
          const auto &wref = expert_w[static_cast<size_t>(e)];
          const std::vector<float> xv(xf.begin() + (tok * x_slots + (x_slots == 1 ? 0 : k)) * cols,
                                      xf.begin() + (tok * x_slots + (x_slots == 1 ? 0 : k) + 1) * cols);
          const auto ref = reference(wref, rows, xv, 1, cols);
          const std::vector<float> got(yh.begin() + tk * rows, yh.begin() + (tk + 1) * rows);
          std::vector<int64_t> idx(rows);
          for (int64_t r = 0; r < rows; ++r)
            idx[r] = r;
          if (!grouped) {
            const float *xp = x.get() + (tok * x_slots + (x_slots == 1 ? 0 : k)) * cols;
            const wo_tensor te = make_tensor(type, w.get() + e * rows * t.nb1, cols, rows);
            ASSERT_EQ(q->linear(dev->host(), &te, xp, WO_DTYPE_F32, y1.get(), WO_DTYPE_F32, 1), WO_OK)
                << q->last_error();
            dev->sync();
            const auto want = y1.download(rows);
            EXPECT_LE(rel_l2(got.data(), want.data(), rows), 1e-6)
                << wo::ggml::type_name(type) << " slot " << tk;
          }
          EXPECT_LE(rel_err(got, rows, idx, ref, 1), linear_tol(type, !grouped))
              << wo::ggml::type_name(type) << " slot " << tk;
        }
      }
    }
  }
}

// linear_id_settled (SDK 1.6) promises the ids are complete before the previous launch ends, so the
// unit GEMV reads them and issues the chosen experts' first chunks before its PDL wait: the same
// results as linear_id, bit for bit, at expert sizes that take the unit path (1 MiB and more each),
// with fresh random ids every time (a chunk issued for the wrong expert would show).
TEST_F(GpuCodec, LinearIdSettledEqualsLinearId) {
  if (!q->linear_id_settled) GTEST_SKIP() << "codec without linear_id_settled";
  for (uint32_t type : kPlugin.types) {
    const int64_t cols = valid_cols(type, 2880), rows = 1024, experts = 6, slots = 4;
    const auto raw = random_blocks(type, rows * experts, cols, rng());
    DeviceArray<uint8_t> w(raw.size());
    w.upload(raw.data(), raw.size());
    const wo_tensor t = make_tensor(type, w.get(), cols, rows, experts);
    ASSERT_EQ(q->check_tensor(&t), WO_OK) << q->last_error();
    for (int64_t x_slots : {int64_t{1}, slots})
      for (int rep = 0; rep < 3; ++rep) {
        std::vector<int32_t> ids(slots);
        for (auto &e : ids)
          e = static_cast<int32_t>(rng() % experts);
        const auto xf = normal_floats(static_cast<size_t>(x_slots * cols), rng());
        DeviceArray<float> x(xf.size()), y(slots * rows), ys(slots * rows);
        DeviceArray<int32_t> dids(ids.size());
        x.upload(xf.data(), xf.size());
        dids.upload(ids.data(), ids.size());
        ASSERT_EQ(q->linear_id(dev->host(), &t, x.get(), WO_DTYPE_F32, x_slots, y.get(), WO_DTYPE_F32, 1,
                               dids.get(), slots),
                  WO_OK)
            << q->last_error();
        ASSERT_EQ(q->linear_id_settled(dev->host(), &t, x.get(), WO_DTYPE_F32, x_slots, ys.get(),
                                       WO_DTYPE_F32, 1, dids.get(), slots),
                  WO_OK)
            << q->last_error();
        dev->sync();
        const auto a = y.download(slots * rows), b = ys.download(slots * rows);
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
            << wo::ggml::type_name(type) << " x_slots " << x_slots << " ids " << ids[0] << ids[1] << ids[2]
            << ids[3];
      }
  }
}

// linear_id_glu (SDK 1.7): the experts' gate, up, their biases and the activation in one launch give
// exactly the bits of two linear_id calls followed by the SDK's activation kernel (swiglu_oai with
// the indexed biases, or swiglu), for every type, at expert sizes the whole-block GEMV takes, with
// fresh random ids (an expert's up rows read from the wrong place would show). Small experts, several
// tokens and gate/up of different shapes decline with nothing written; a bad activation is refused.
TEST_F(GpuCodec, LinearIdGluEqualsTwoLinearIdsThenTheActivation) {
  if (!WO_HAS_FIELD(wo_quant_v1, q->struct_size, linear_id_glu) || !q->linear_id_glu)
    GTEST_SKIP() << "codec without linear_id_glu";
  if (const char *v = non_default_gemv()) GTEST_SKIP() << "WORKER_QUANT_GEMV=" << v << ": variant 5 only";
  const cudaStream_t s = dev->stream();
  for (uint32_t type : kPlugin.types) {
    const char *tn = wo::ggml::type_name(type);
    const bool block_type = wo::ggml::type_info(type)->block_elems > 1;
    const int64_t experts = 6, slots = 4;
    for (const int64_t rows : {int64_t{1032}, int64_t{64}}) { // 1 MiB+ experts (units), and small ones
      const int64_t cols = valid_cols(type, rows > 64 ? 2880 : 256);
      const bool units = unit_gemv_weight(type, rows, cols);
      const auto graw = random_blocks(type, rows * experts, cols, rng());
      const auto uraw = random_blocks(type, rows * experts, cols, rng());
      DeviceArray<uint8_t> gw(graw.size()), uw(uraw.size());
      gw.upload(graw.data(), graw.size());
      uw.upload(uraw.data(), uraw.size());
      const wo_tensor tg = make_tensor(type, gw.get(), cols, rows, experts),
                      tu = make_tensor(type, uw.get(), cols, rows, experts);
      const auto gbf = normal_floats(static_cast<size_t>(experts * rows), rng());
      const auto ubf = normal_floats(static_cast<size_t>(experts * rows), rng());
      DeviceArray<float> gb(gbf.size()), ub(ubf.size());
      gb.upload(gbf.data(), gbf.size());
      ub.upload(ubf.data(), ubf.size());
      for (const bool clamped : {true, false})
        for (int rep = 0; rep < 2; ++rep) {
          std::vector<int32_t> ids(slots);
          for (auto &e : ids)
            e = static_cast<int32_t>(rng() % experts);
          // Scaled so that the clamp at 7 binds on some rows.
          const auto xf = normal_floats(static_cast<size_t>(cols), rng(), 4.0f);
          DeviceArray<float> x(xf.size()), y(slots * rows), yg(slots * rows), yu(slots * rows),
              want(slots * rows);
          DeviceArray<int32_t> dids(ids.size());
          x.upload(xf.data(), xf.size());
          dids.upload(ids.data(), ids.size());
          const std::vector<float> untouched(static_cast<size_t>(slots * rows), 7.0f);
          y.upload(untouched.data(), untouched.size());
          const wo_expert_glu glu = clamped ? wo::expert_glu(WO_GLU_CLAMPED, 1.702f, 7.0f, gb.get(), ub.get())
                                            : wo::expert_glu(WO_GLU_SILU, 0.0f, 0.0f);
          const wo_status st = q->linear_id_glu(dev->host(), &tg, &tu, x.get(), WO_DTYPE_F32, y.get(),
                                                WO_DTYPE_F32, 1, dids.get(), slots, &glu);
          if (!block_type || !units) {
            EXPECT_EQ(st, WO_ERR_UNSUPPORTED) << tn << " " << rows << "x" << cols << ": only the unit GEMV";
            dev->sync();
            EXPECT_EQ(y.download(untouched.size()), untouched) << tn << ": a declined linear_id_glu wrote";
            continue;
          }
          ASSERT_EQ(st, WO_OK) << tn << ": " << q->last_error();
          ASSERT_EQ(q->linear_id(dev->host(), &tg, x.get(), WO_DTYPE_F32, 1, yg.get(), WO_DTYPE_F32, 1,
                                 dids.get(), slots),
                    WO_OK);
          ASSERT_EQ(q->linear_id(dev->host(), &tu, x.get(), WO_DTYPE_F32, 1, yu.get(), WO_DTYPE_F32, 1,
                                 dids.get(), slots),
                    WO_OK);
          if (clamped) {
            wo::kernels::IndexedBias bias;
            bias.gate = gb.get(), bias.up = ub.get(), bias.ids = dids.get();
            ASSERT_EQ(wo::kernels::swiglu_oai(yg.get(), yu.get(), want.get(), slots, rows, 1.702f, 7.0f, s, 0,
                                              bias),
                      cudaSuccess);
          } else {
            ASSERT_EQ(wo::kernels::swiglu(yg.get(), yu.get(), want.get(), slots, rows, s), cudaSuccess);
          }
          dev->sync();
          const auto got = y.download(slots * rows), ref = want.download(slots * rows);
          EXPECT_EQ(std::memcmp(got.data(), ref.data(), got.size() * sizeof(float)), 0)
              << tn << (clamped ? " clamped" : " silu") << " ids " << ids[0] << ids[1] << ids[2] << ids[3];
          if (rep == 0 && clamped) { // the clamp binds on some rows, or the test would not show it
            int clamped_rows = 0;
            const auto g = yg.download(slots * rows);
            for (int64_t i = 0; i < slots * rows; ++i)
              clamped_rows +=
                  g[static_cast<size_t>(i)] + gbf[static_cast<size_t>(ids[i / rows] * rows + i % rows)] >
                  7.0f;
            EXPECT_GT(clamped_rows, 0) << tn;
            std::printf("[ id_glu   ] %-6s %lldx%lld x %lld experts: %d of %lld gate values past the limit\n",
                        tn, static_cast<long long>(rows), static_cast<long long>(cols),
                        static_cast<long long>(experts), clamped_rows, static_cast<long long>(slots * rows));
          }
        }
      if (!block_type || !units) continue;
      // Declined with nothing written: several tokens, up of another row count. Refused: one bias,
      // an unknown kind.
      const std::vector<float> sentinel(static_cast<size_t>(slots * rows), 7.0f);
      DeviceArray<float> x(2 * cols), y(2 * slots * rows);
      DeviceArray<int32_t> dids(2 * slots);
      const std::vector<int32_t> zeros(2 * slots, 0);
      dids.upload(zeros.data(), zeros.size());
      const auto xf = normal_floats(static_cast<size_t>(2 * cols), rng());
      x.upload(xf.data(), xf.size());
      y.upload(sentinel.data(), sentinel.size());
      const wo_expert_glu silu = wo::expert_glu(WO_GLU_SILU, 0.0f, 0.0f);
      EXPECT_EQ(q->linear_id_glu(dev->host(), &tg, &tu, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, 2,
                                 dids.get(), slots, &silu),
                WO_ERR_UNSUPPORTED);
      const wo_tensor shorter = make_tensor(type, uw.get(), cols, rows - 8, experts);
      EXPECT_EQ(q->linear_id_glu(dev->host(), &tg, &shorter, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, 1,
                                 dids.get(), slots, &silu),
                WO_ERR_UNSUPPORTED);
      const wo_expert_glu one_bias = wo::expert_glu(WO_GLU_CLAMPED, 1.702f, 7.0f, gb.get(), nullptr);
      EXPECT_EQ(q->linear_id_glu(dev->host(), &tg, &tu, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, 1,
                                 dids.get(), slots, &one_bias),
                WO_ERR_INVALID_ARGUMENT);
      wo_expert_glu bad_kind = silu;
      bad_kind.kind = 7;
      EXPECT_EQ(q->linear_id_glu(dev->host(), &tg, &tu, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, 1,
                                 dids.get(), slots, &bad_kind),
                WO_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(q->last_error()).find("found 7"), std::string::npos) << q->last_error();
      dev->sync();
      EXPECT_EQ(y.download(sentinel.size()), sentinel) << tn << ": a declined or refused linear_id_glu wrote";
    }
  }
}

// The grouped linear_id path (>= kGroupedMinTokens tokens) at MoE-prefill shapes of the tiny fixture
// models: rows and columns shorter than one tile (tails on both axes), ~85 problems per expert (two
// tiles each). The rounding is FP16's (activations, and weights not exact in FP16): measured worst
// slot 1.0e-3 for MXFP4 rows of 64 columns, under kLinearTol; a tiling or tail bug shows as errors
// of order 1.
TEST_F(GpuCodec, GroupedLinearIdAtSmallShapes) {
  struct Case {
    int64_t cols, rows;
  };
  for (uint32_t type : kPlugin.types) {
    for (const Case c : {Case{32, 64}, Case{64, 32}, Case{96, 200}}) {
      const int64_t cols = valid_cols(type, c.cols), rows = c.rows, experts = 8, slots = 4, n = 170;
      const auto raw = random_blocks(type, rows * experts, cols, rng());
      DeviceArray<uint8_t> w(raw.size());
      w.upload(raw.data(), raw.size());
      const wo_tensor t = make_tensor(type, w.get(), cols, rows, experts);
      ASSERT_EQ(q->check_tensor(&t), WO_OK) << q->last_error();
      std::vector<int64_t> all(rows * experts);
      for (int64_t r = 0; r < rows * experts; ++r)
        all[r] = r;
      const auto wref = dequant_rows(type, raw, all, cols);
      for (int64_t x_slots : {int64_t{1}, slots}) {
        std::vector<int32_t> ids(n * slots);
        for (auto &e : ids)
          e = static_cast<int32_t>(rng() % experts);
        const auto xf = normal_floats(static_cast<size_t>(n * x_slots * cols), rng());
        const auto yh = linear_id_host(t, xf, ids, n, x_slots, slots, rows);
        ASSERT_FALSE(HasFailure());
        double worst = 0;
        for (int64_t tk = 0; tk < n * slots; ++tk) {
          const int64_t tok = tk / slots, k = tk % slots, e = ids[tk];
          const std::vector<float> we(wref.begin() + e * rows * cols, wref.begin() + (e + 1) * rows * cols);
          const int64_t xo = (tok * x_slots + (x_slots == 1 ? 0 : k)) * cols;
          const std::vector<float> xv(xf.begin() + xo, xf.begin() + xo + cols);
          const auto ref = reference(we, rows, xv, 1, cols);
          const std::vector<float> got(yh.begin() + tk * rows, yh.begin() + (tk + 1) * rows);
          std::vector<int64_t> idx(rows);
          for (int64_t r = 0; r < rows; ++r)
            idx[r] = r;
          worst = std::max(worst, rel_err(got, rows, idx, ref, 1));
        }
        std::printf("[ grouped  ] %-6s %4lldx%-4lld x_slots=%lld worst slot rel=%.3e\n",
                    wo::ggml::type_name(type), static_cast<long long>(rows), static_cast<long long>(cols),
                    static_cast<long long>(x_slots), worst);
        EXPECT_LE(worst, kLinearTol) << wo::ggml::type_name(type) << " " << rows << "x" << cols;
      }
    }
  }
}

TEST_F(GpuCodec, FixtureGemvGoldensReproduce) {
  const auto bytes = read_file(fixtures_dir() + "/quant/index.json");
  rapidjson::Document doc;
  doc.Parse(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  ASSERT_TRUE(doc.IsArray());
  int checked = 0;
  for (const auto &e : doc.GetArray()) {
    uint32_t type = UINT32_MAX;
    for (uint32_t id : kPlugin.types)
      if (std::string(e["type"].GetString()) == wo::ggml::type_name(id)) type = id;
    if (type == UINT32_MAX) continue;
    const std::string base = fixtures_dir() + "/quant/" + e["file_prefix"].GetString();
    const int64_t rows = e["rows"].GetInt64(), cols = e["cols"].GetInt64();
    const auto raw = read_file(base + ".raw.bin");
    const auto xf = read_array<float>(base + ".x.f32");
    const auto want = read_array<double>(base + ".y.f64");
    DeviceArray<uint8_t> w(raw.size());
    w.upload(raw.data(), raw.size());
    DeviceArray<float> x(cols), y(rows);
    x.upload(xf.data(), cols);
    const wo_tensor t = make_tensor(type, w.get(), cols, rows);
    ASSERT_EQ(q->linear(dev->host(), &t, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, 1), WO_OK)
        << q->last_error();
    dev->sync();
    const auto got = y.download(rows);
    double num = 0, den = 0;
    for (int64_t r = 0; r < rows; ++r) {
      num += (got[r] - want[r]) * (got[r] - want[r]);
      den += want[r] * want[r];
    }
    const double err = std::sqrt(num / std::max(den, 1e-300));
    std::printf("[ golden   ] %-24s rel_l2=%.3e\n", e["file_prefix"].GetString(), err);
    EXPECT_LE(err, 1e-2) << base; // M0-W-1822
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// linear_multi (q/k/v, gate/up in one launch): for every block-quantized type the one-token call
// launches once and gives exactly the bits of separate linear calls (same staging, same per-row
// reduction); the plain types, several tokens and mixed row lengths decline with
// WO_ERR_UNSUPPORTED and enqueue nothing, so the host falls back to linear per weight.
TEST_F(GpuCodec, LinearMultiEqualsSeparateLinears) {
  ASSERT_TRUE(WO_HAS_FIELD(wo_quant_v1, q->struct_size, linear_multi) && q->linear_multi);
  if (const char *v = non_default_gemv())
    GTEST_SKIP() << "WORKER_QUANT_GEMV=" << v
                 << ": only the default GEMV (variant 5) and variant 3 have the one-launch path";
  for (const LaunchCase &lc : kLaunchCases)
    for (uint32_t type : kPlugin.types) {
      const int64_t cols = valid_cols(type, lc.cols);
      const int64_t *rows = lc.rows; // q, k, v of a 0.5B-like layer, or larger
      std::unique_ptr<DeviceArray<uint8_t>> w[3];
      std::unique_ptr<DeviceArray<float>> y[3], y_ref[3];
      wo_tensor t[3];
      const wo_tensor *tw[3];
      void *ty[3];
      for (int i = 0; i < 3; ++i) {
        const auto raw = random_blocks(type, rows[i], cols, rng());
        w[i] = std::make_unique<DeviceArray<uint8_t>>(raw.size());
        w[i]->upload(raw.data(), raw.size());
        y[i] = std::make_unique<DeviceArray<float>>(static_cast<size_t>(3 * rows[i]));
        y_ref[i] = std::make_unique<DeviceArray<float>>(static_cast<size_t>(3 * rows[i]));
        t[i] = make_tensor(type, w[i]->get(), cols, rows[i]);
        tw[i] = &t[i];
        ty[i] = y[i]->get();
      }
      const auto xf = normal_floats(static_cast<size_t>(3 * cols), rng());
      DeviceArray<float> x(xf.size());
      x.upload(xf.data(), xf.size());
      const bool block_type = wo::ggml::type_info(type)->block_elems > 1;
      if (stack_declines(type, cols, {rows[0], rows[1], rows[2]})) {
        const std::vector<float> sentinel(static_cast<size_t>(rows[0]), 7.0f);
        y[0]->upload(sentinel.data(), sentinel.size());
        EXPECT_EQ(q->linear_multi(dev->host(), 3, tw, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32, 1),
                  WO_ERR_UNSUPPORTED);
        dev->sync();
        EXPECT_EQ(y[0]->download(sentinel.size()), sentinel) << "a declined linear_multi wrote its output";
        continue;
      }
      const wo_status st = q->linear_multi(dev->host(), 3, tw, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32, 1);
      if (!block_type) {
        EXPECT_EQ(st, WO_ERR_UNSUPPORTED) << wo::ggml::type_name(type) << ": plain types have no int8 GEMV";
        continue;
      }
      ASSERT_EQ(st, WO_OK) << wo::ggml::type_name(type) << ": " << q->last_error();
      for (int i = 0; i < 3; ++i)
        ASSERT_EQ(q->linear(dev->host(), tw[i], x.get(), WO_DTYPE_F32, y_ref[i]->get(), WO_DTYPE_F32, 1),
                  WO_OK);
      dev->sync();
      for (int i = 0; i < 3; ++i)
        EXPECT_EQ(y[i]->download(rows[i]), y_ref[i]->download(rows[i]))
            << wo::ggml::type_name(type) << " weight " << i << ": one launch differs from its own linear";
      // Declined, with nothing written: several tokens, and weights of different row lengths.
      const std::vector<float> sentinel(static_cast<size_t>(3 * rows[0]), 7.0f);
      y[0]->upload(sentinel.data(), sentinel.size());
      EXPECT_EQ(q->linear_multi(dev->host(), 3, tw, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32, 3),
                WO_ERR_UNSUPPORTED);
      wo_tensor wide = make_tensor(type, w[2]->get(), valid_cols(type, lc.cols) / 2, rows[2]);
      const wo_tensor *mixed[2] = {tw[0], &wide};
      if (wide.ne[0] != cols && wo::ggml::is_row_valid(type, wide.ne[0]))
        EXPECT_EQ(q->linear_multi(dev->host(), 2, mixed, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32, 1),
                  WO_ERR_UNSUPPORTED);
      dev->sync();
      EXPECT_EQ(y[0]->download(sentinel.size()), sentinel) << "a declined linear_multi wrote its output";
    }
}

// The unit GEMV cuts a weight's rows into warp groups or, where that shortens the longest warp's
// chain of chunks, into one run of rows per CTA whose chunks the CTA's warps take in turn
// (UnitGrid::tiled: plain weights and SwiGLU pairs, never a stack's segments). Either way a row's sum
// is the same fixed tree of its blocks' dots, so a weight at shapes the tiled grid takes (GPT-OSS's
// 2880 x 2880 expert and 2880 x 4096 o projection, Phi-3's 9216 x 3072 q/k/v and 3072 x 8192 down
// projection, 896 x 4864, whose last CTA's run is shorter, and Q4_K/Q5_K 2880 x 4864, whose runs of
// 22 rows leave 418 partial dots: the chunk stages after them must still start on 16 bytes) gives
// the bits of its two halves run as a stack (warp groups). Q6_K's 896 x 4864 (3990-byte rows) runs
// only tiled and its stack declines: its halves run alone, each tiled in runs of its own. Which of
// these shapes an H100 runs tiled (Phi-3's down projection and GPT-OSS's o projection among them,
// ties with uneven warp rounds) is unit_grid_test's to check.
TEST_F(GpuCodec, TiledUnitGridEqualsWarpGroups) {
  ASSERT_TRUE(WO_HAS_FIELD(wo_quant_v1, q->struct_size, linear_multi) && q->linear_multi);
  if (const char *v = non_default_gemv()) GTEST_SKIP() << "WORKER_QUANT_GEMV=" << v << ": variant 5 only";
  const ShapeCase shapes[] = {{896, 4864},  {2880, 2880}, {9216, 3072},
                              {3072, 8192}, {2880, 4864}, {2880, 4096}};
  int checked = 0;
  for (uint32_t type : kPlugin.types)
    for (const auto &sc : shapes) {
      const int64_t cols = valid_cols(type, sc.cols), rows = sc.rows, top = rows / 2;
      if (!unit_gemv_weight(type, top, cols) || !unit_gemv_weight(type, rows - top, cols)) continue;
      const auto raw = random_blocks(type, rows, cols, rng());
      DeviceArray<uint8_t> w(raw.size());
      w.upload(raw.data(), raw.size());
      const uint64_t row_bytes = wo::ggml::row_bytes(type, cols);
      const wo_tensor whole = make_tensor(type, w.get(), cols, rows);
      const wo_tensor halves[2] = {make_tensor(type, w.get(), cols, top),
                                   make_tensor(type, w.get() + top * row_bytes, cols, rows - top)};
      const wo_tensor *stack[2] = {&halves[0], &halves[1]};
      const auto xf = normal_floats(static_cast<size_t>(cols), rng());
      DeviceArray<float> x(xf.size()), y(rows), ya(top), yb(rows - top);
      x.upload(xf.data(), xf.size());
      void *ys[2] = {ya.get(), yb.get()};
      ASSERT_EQ(q->linear(dev->host(), &whole, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, 1), WO_OK)
          << q->last_error();
      if (stack_declines(type, cols, {top, rows - top})) { // each half alone: tiled, in runs of its own
        for (int i = 0; i < 2; ++i)
          ASSERT_EQ(q->linear(dev->host(), &halves[i], x.get(), WO_DTYPE_F32, ys[i], WO_DTYPE_F32, 1), WO_OK)
              << q->last_error();
      } else {
        ASSERT_EQ(q->linear_multi(dev->host(), 2, stack, x.get(), WO_DTYPE_F32, ys, WO_DTYPE_F32, 1), WO_OK)
            << q->last_error();
      }
      dev->sync();
      const auto got = y.download(rows), a = ya.download(top), b = yb.download(rows - top);
      EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + top), a)
          << wo::ggml::type_name(type) << " " << rows << "x" << cols << ": rows 0.." << top;
      EXPECT_EQ(std::vector<float>(got.begin() + top, got.end()), b)
          << wo::ggml::type_name(type) << " " << rows << "x" << cols << ": rows " << top << "..";
      ++checked;
    }
  EXPECT_GT(checked, 0) << "no weight of this codec took the unit GEMV";
}

// Tile chunks (unit_gemv.cuh, UnitGrid::tile_w) give every row the bits of the contiguous chunks:
// the same block dots in the same slots, reduced in the same tree; only which lane computes which
// unit, and the copies, differ. Phi-3-mini's shapes where the grid takes tiles (gate/up, q/k/v, the
// Q6_K down projection and LM head): plain weights and SwiGLU pairs (gate's and up's rows copied
// from two bases).
TEST_F(GpuCodec, TileChunksGiveTheContiguousChunksBits) {
  namespace dev = wo::quant::dev;
  if (const char *v = non_default_gemv()) GTEST_SKIP() << "WORKER_QUANT_GEMV=" << v << ": variant 5 only";
  if (!dev::unit_tiles_enabled() || dev::act_terms() != 2) GTEST_SKIP() << "tile chunks off";
  struct Case {
    uint32_t type;
    int64_t rows, cols;
    bool swiglu;
  };
  // (Phi-3's o and Q4_K down projections, 3072x3072 and 3072x8192, keep contiguous chunks: tiles
  // would take more chunks there.)
  const Case cases[] = {{wo::ggml::Q4_K, 16384, 3072, false}, {wo::ggml::Q4_K, 8192, 3072, true},
                        {wo::ggml::Q5_K, 9216, 3072, false},  {wo::ggml::Q6_K, 3072, 8192, false},
                        {wo::ggml::Q6_K, 32064, 3072, false}, {wo::ggml::Q6_K, 4096, 3072, true}};
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  int checked = 0;
  for (const Case &c : cases) {
    if (std::find(kPlugin.types.begin(), kPlugin.types.end(), c.type) == kPlugin.types.end()) continue;
    const int64_t halves = c.swiglu ? 2 : 1;
    const auto raw = random_blocks(c.type, halves * c.rows, c.cols, rng());
    DeviceArray<uint8_t> w(raw.size());
    w.upload(raw.data(), raw.size());
    const uint64_t row_bytes = wo::ggml::row_bytes(c.type, c.cols);
    const auto xf = normal_floats(static_cast<size_t>(c.cols), rng());
    DeviceArray<float> x(xf.size()), y_tiles(c.rows), y_plain(c.rows);
    x.upload(xf.data(), xf.size());
    wo::quant::Segments seg;
    if (c.swiglu) { // gate: rows 0..rows-1 of the upload, up: the rest
      seg.n = 2;
      seg.swiglu = true;
      seg.w[0] = w.get();
      seg.w[1] = w.get() + c.rows * row_bytes;
      seg.end[0] = c.rows;
      seg.end[1] = 2 * c.rows;
    }
    const auto run = [&](auto dec, float *y, bool tiles) {
      using D = decltype(dec);
      const wo::quant::GemvParams p{w.get(), row_bytes, 0, c.rows,  c.cols, x.get(), false,
                                    y,       false,     1, nullptr, 1,      1,       1};
      wo::quant::Segments sg = seg;
      if (c.swiglu) sg.y[0] = y;
      const int tile_w = dev::unit_grid<D>(p, sg, tiles).tile_w;
      EXPECT_EQ(tile_w > 0, tiles) << wo::ggml::type_name(c.type) << " " << c.rows << "x" << c.cols
                                   << (c.swiglu ? " SwiGLU" : "") << ": tile_w " << tile_w;
      EXPECT_TRUE(dev::launch_units<D>(p, s, sg, {}, tiles));
      EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    };
    const auto both = [&](auto dec) {
      run(dec, y_plain.get(), false);
      run(dec, y_tiles.get(), true);
    };
    if (c.type == wo::ggml::Q4_K)
      both(dev::DecQ4_K{});
    else if (c.type == wo::ggml::Q5_K)
      both(dev::DecQ5_K{});
    else
      both(dev::DecQ6_K{});
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const auto a = y_plain.download(c.rows), b = y_tiles.download(c.rows);
    EXPECT_EQ(a, b) << wo::ggml::type_name(c.type) << " " << c.rows << "x" << c.cols
                    << (c.swiglu ? " SwiGLU" : "");
    // and not a stage left empty: the rows hold finite, not all equal values
    EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](float v) { return std::isfinite(v); }));
    EXPECT_NE(*std::min_element(a.begin(), a.end()), *std::max_element(a.begin(), a.end()));
    std::printf("[ tiles    ] %s %lldx%lld%s: tile chunks give the contiguous chunks' bits\n",
                wo::ggml::type_name(c.type), static_cast<long long>(c.rows), static_cast<long long>(c.cols),
                c.swiglu ? " SwiGLU" : "");
    ++checked;
  }
  cudaStreamDestroy(s);
  if (checked == 0) GTEST_SKIP() << "no Q4_K, Q5_K or Q6_K in this codec";
}

// A SwiGLU pass whose warp groups would take uneven rounds runs on the tiled grid when the two
// grids' longest chains tie (unit_grid): Qwen2.5-0.5B's gate/up, Q5_0 4864 x 896 (2432 groups of
// 2 x 2 rows on 132 SMs' 2112 warps). The tiled pass gives exactly the bits of the two linears (one
// round of warp groups each) followed by the SDK's swiglu kernel.
TEST_F(GpuCodec, SwigluTiesWithUnevenRoundsRunTiledWithTheSameBits) {
  namespace qd = wo::quant::dev;
  if (const char *v = non_default_gemv()) GTEST_SKIP() << "WORKER_QUANT_GEMV=" << v << ": variant 5 only";
  const uint32_t type = wo::ggml::Q5_0;
  if (std::find(kPlugin.types.begin(), kPlugin.types.end(), type) == kPlugin.types.end())
    GTEST_SKIP() << "no Q5_0 in this codec";
  const int64_t rows = 4864, cols = 896;
  const uint64_t row_bytes = wo::ggml::row_bytes(type, cols);
  const auto graw = random_blocks(type, rows, cols, rng()), uraw = random_blocks(type, rows, cols, rng());
  DeviceArray<uint8_t> gw(graw.size()), uw(uraw.size());
  gw.upload(graw.data(), graw.size());
  uw.upload(uraw.data(), uraw.size());
  const auto xf = normal_floats(static_cast<size_t>(cols), rng());
  DeviceArray<float> x(xf.size()), y(rows), yg(rows), yu(rows), act(rows);
  x.upload(xf.data(), xf.size());
  // The grid the pass takes: tiled where 2112 warps (132 SMs) meet the tie.
  wo::quant::Segments seg;
  seg.n = 2;
  seg.swiglu = true;
  seg.w[0] = gw.get();
  seg.w[1] = uw.get();
  seg.end[0] = rows;
  seg.end[1] = 2 * rows;
  const wo::quant::GemvParams p{gw.get(), row_bytes, 0, rows,    cols, x.get(), false,
                                y.get(),  false,     1, nullptr, 1,    1,       1};
  const bool tiled = qd::unit_grid<qd::DecQ5_0>(p, seg).tiled;
  if (qd::unit_tiled_enabled() && qd::unit_tiled_ties() >= 1 && qd::act_terms() == 2 &&
      qd::device_sm_count() == 132)
    EXPECT_TRUE(tiled) << "Q5_0 4864x896 SwiGLU on 132 SMs: the tie with uneven warp rounds runs tiled";
  const wo_tensor tg = make_tensor(type, gw.get(), cols, rows), tu = make_tensor(type, uw.get(), cols, rows);
  ASSERT_EQ(q->linear_swiglu(dev->host(), &tg, &tu, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, 1), WO_OK)
      << q->last_error();
  ASSERT_EQ(q->linear(dev->host(), &tg, x.get(), WO_DTYPE_F32, yg.get(), WO_DTYPE_F32, 1), WO_OK);
  ASSERT_EQ(q->linear(dev->host(), &tu, x.get(), WO_DTYPE_F32, yu.get(), WO_DTYPE_F32, 1), WO_OK);
  ASSERT_EQ(wo::kernels::swiglu(yg.get(), yu.get(), act.get(), 1, rows, dev->stream()), cudaSuccess);
  dev->sync();
  const auto got = y.download(rows), want = act.download(rows);
  EXPECT_EQ(got, want) << "Q5_0 4864x896 SwiGLU (" << (tiled ? "tiled" : "warp groups")
                       << ") against two linears and swiglu";
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](float v) { return std::isfinite(v); }));
  EXPECT_NE(*std::min_element(got.begin(), got.end()), *std::max_element(got.begin(), got.end()));
  std::printf("[ ties     ] Q5_0 4864x896 SwiGLU %s: the two linears' and swiglu's bits\n",
              tiled ? "tiled" : "by warp groups");
}

// linear_swiglu (gate, up and SiLU in one pass) gives exactly the bits of the two linears followed
// by the SDK's swiglu kernel, for every block-quantized type, on variant 3's small weights and
// variant 5's large ones (gate's row sums wait for up's in the unit kernel), with partial CTAs and
// groups; and it is within rounding of the host's formula. Plain types, several tokens and gate/up
// of different shapes decline with nothing written.
TEST_F(GpuCodec, LinearSwigluEqualsTwoLinearsThenSilu) {
  ASSERT_TRUE(WO_HAS_FIELD(wo_quant_v1, q->struct_size, linear_swiglu) && q->linear_swiglu);
  if (const char *v = non_default_gemv())
    GTEST_SKIP() << "WORKER_QUANT_GEMV=" << v << ": only variants 3 and 5 have the single pass";
  constexpr double kTol = 1e-5; // the host's expf against the device's; the dots are the same bits
  const cudaStream_t s = dev->stream();
  for (const LaunchCase &lc : kLaunchCases)
    for (uint32_t type : kPlugin.types) {
      const char *tn = wo::ggml::type_name(type);
      const int64_t cols = valid_cols(type, lc.cols), rows = lc.rows[2];
      const auto graw = random_blocks(type, rows, cols, rng());
      const auto uraw = random_blocks(type, rows, cols, rng());
      DeviceArray<uint8_t> gw(graw.size()), uw(uraw.size());
      gw.upload(graw.data(), graw.size());
      uw.upload(uraw.data(), uraw.size());
      const wo_tensor tg = make_tensor(type, gw.get(), cols, rows),
                      tu = make_tensor(type, uw.get(), cols, rows);
      const auto xf = normal_floats(static_cast<size_t>(3 * cols), rng());
      DeviceArray<float> x(xf.size()), y(3 * rows), yg(rows), yu(rows), act(rows);
      x.upload(xf.data(), xf.size());
      const bool block_type = wo::ggml::type_info(type)->block_elems > 1;
      const std::vector<float> untouched(static_cast<size_t>(3 * rows), 7.0f);
      y.upload(untouched.data(), untouched.size());
      const wo_status st =
          q->linear_swiglu(dev->host(), &tg, &tu, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, 1);
      if (!block_type) {
        EXPECT_EQ(st, WO_ERR_UNSUPPORTED) << tn << ": plain types have no single pass";
        dev->sync();
        EXPECT_EQ(y.download(untouched.size()), untouched) << "a declined linear_swiglu wrote its output";
        continue;
      }
      ASSERT_EQ(st, WO_OK) << tn << ": " << q->last_error();
      ASSERT_EQ(q->linear(dev->host(), &tg, x.get(), WO_DTYPE_F32, yg.get(), WO_DTYPE_F32, 1), WO_OK);
      ASSERT_EQ(q->linear(dev->host(), &tu, x.get(), WO_DTYPE_F32, yu.get(), WO_DTYPE_F32, 1), WO_OK);
      ASSERT_EQ(wo::kernels::swiglu(yg.get(), yu.get(), act.get(), 1, rows, s), cudaSuccess);
      dev->sync();
      const auto got = y.download(3 * rows), g = yg.download(rows), u = yu.download(rows);
      EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + rows), act.download(rows))
          << tn << " " << rows << "x" << cols << (unit_gemv_weight(type, rows, cols) ? " (units)" : "");
      EXPECT_EQ(std::vector<float>(got.begin() + rows, got.end()),
                std::vector<float>(untouched.begin() + rows, untouched.end()))
          << tn << ": wrote past its rows";
      std::vector<float> want(static_cast<size_t>(rows));
      for (size_t r = 0; r < want.size(); ++r)
        want[r] = g[r] / (1.0f + std::exp(-g[r])) * u[r];
      const double err = rel_l2(got.data(), want.data(), want.size());
      EXPECT_LE(err, kTol) << tn;
      std::printf("[ swiglu   ] %-6s %lldx%lld %s rel_l2=%.3e\n", tn, static_cast<long long>(rows),
                  static_cast<long long>(cols), unit_gemv_weight(type, rows, cols) ? "units" : "int8x", err);
      // Declined, with nothing written: several tokens, and gate and up of different row counts.
      const std::vector<float> sentinel(static_cast<size_t>(3 * rows), 7.0f);
      y.upload(sentinel.data(), sentinel.size());
      EXPECT_EQ(q->linear_swiglu(dev->host(), &tg, &tu, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, 3),
                WO_ERR_UNSUPPORTED);
      const wo_tensor shorter = make_tensor(type, uw.get(), cols, rows - 8);
      EXPECT_EQ(q->linear_swiglu(dev->host(), &tg, &shorter, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, 1),
                WO_ERR_UNSUPPORTED);
      dev->sync();
      EXPECT_EQ(y.download(sentinel.size()), sentinel) << "a declined linear_swiglu wrote its output";
    }
}

// linear_fused with x_staged (SDK 1.9): the one-token int8 GEMVs copy the row x's producer staged
// (worker/staged_x.cuh) instead of quantizing x, and give the bits they give from x. To show that
// the staged row is what was read, x holds other values than the staged row (x1, staged x2): the
// result must be that of x2 (x1's under WORKER_STAGED_X=0, which reads x). Shapes: the int8x
// kernel (896 x 896), the unit kernel (2048 x 2048) and its tiled grid (Q6_K 896 x 4864), one
// group of zeros (amax 0). The SDK's stage_row kernel gives the host's staging byte for byte.
TEST_F(GpuCodec, LinearFusedCopiesTheRowItsProducerStaged) {
  ASSERT_TRUE(WO_HAS_FIELD(wo_quant_v1, q->struct_size, linear_fused) && q->linear_fused);
  if (const char *v = non_default_gemv())
    GTEST_SKIP() << "WORKER_QUANT_GEMV=" << v << ": FP32 activations, nothing staged";
  const bool reads_staged = wo::staged::enabled();
  const cudaStream_t s = dev->stream();
  const struct { int64_t rows, cols; } shapes[] = {{896, 896}, {2048, 2048}, {896, 4864}};
  for (const auto &sh : shapes)
    for (uint32_t type : kPlugin.types) {
      if (wo::ggml::type_info(type)->block_elems == 1) continue; // plain types: no int8 GEMV
      const char *tn = wo::ggml::type_name(type);
      const int64_t cols = valid_cols(type, sh.cols);
      if (!wo::staged::fits(cols)) continue;
      const auto raw = random_blocks(type, sh.rows, cols, rng());
      DeviceArray<uint8_t> w(raw.size());
      w.upload(raw.data(), raw.size());
      const wo_tensor t = make_tensor(type, w.get(), cols, sh.rows);
      const wo_tensor *tw = &t;
      auto x1 = normal_floats(static_cast<size_t>(cols), rng(), 3.0f);
      auto x2 = normal_floats(static_cast<size_t>(cols), rng(), 3.0f);
      std::fill(x2.begin() + 32, x2.begin() + 64, 0.0f); // a group of zeros
      const int64_t nb = wo::staged::row_bytes(cols);
      std::vector<uint8_t> staged2(static_cast<size_t>(nb));
      wo::staged::stage_row_host(x2.data(), cols, staged2.data());
      DeviceArray<float> dx1(cols), dx2(cols), y(sh.rows), y_ref(sh.rows);
      DeviceArray<uint8_t> dst(nb), dst_dev(nb);
      dx1.upload(x1.data(), x1.size());
      dx2.upload(x2.data(), x2.size());
      dst.upload(staged2.data(), staged2.size());
      ASSERT_EQ(wo::kernels::stage_row(dx2.get(), dst_dev.get(), cols, s), cudaSuccess);
      const auto b = normal_floats(static_cast<size_t>(sh.rows), rng());
      const auto y0 = normal_floats(static_cast<size_t>(sh.rows), rng(), 5.0f);
      DeviceArray<float> bias(sh.rows);
      bias.upload(b.data(), b.size());
      void *ty[1] = {y.get()}, *tref[1] = {y_ref.get()};
      // y0 + W x + b from x alone (the reference), then from x1 with x2's staged row
      const auto run = [&](const float *x, const void *staged, void *const *out) {
        const wo_linear_fusion f = wo::fusion_residual(bias.get(), staged);
        return q->linear_fused(dev->host(), WO_LINEAR_STACK, 1, &tw, x, WO_DTYPE_F32, out, WO_DTYPE_F32, 1,
                               &f);
      };
      y_ref.upload(y0.data(), y0.size());
      ASSERT_EQ(run(reads_staged ? dx2.get() : dx1.get(), nullptr, tref), WO_OK)
          << tn << ": " << q->last_error();
      y.upload(y0.data(), y0.size());
      ASSERT_EQ(run(dx1.get(), dst.get(), ty), WO_OK) << tn << ": " << q->last_error();
      dev->sync();
      EXPECT_EQ(dst_dev.download(static_cast<size_t>(nb)), staged2) << tn << " " << cols << ": stage_row";
      const auto got = y.download(static_cast<size_t>(sh.rows)),
                 want = y_ref.download(static_cast<size_t>(sh.rows));
      EXPECT_EQ(got, want) << tn << " " << sh.rows << "x" << cols
                           << (unit_gemv_weight(type, sh.rows, cols) ? " (units)" : " (int8x)")
                           << ": the staged row's result";
      EXPECT_NE(got, y0) << tn << ": nothing was added";
    }
}

// linear_fused's SwiGLU with y_staged (SDK 1.9): the unit GEMV's by-warp grid, dealt CTA-major,
// writes its output row and the same row staged as the host stages it (the down projection's
// x_staged), the row itself bit for bit what it gives without y_staged. Qwen2.5's gate/up (Q5_0
// 4864 x 896: two rows per group, two rounds on some CTAs) and Phi-3's (Q4_K 8192 x 3072: four
// rows, one round) must stage; other types and shapes may decline, with nothing written, as the
// int8x kernel's small weights always do (and everything under WORKER_STAGED_X=0).
TEST_F(GpuCodec, LinearSwigluStagesItsOutputForTheNextProjection) {
  ASSERT_TRUE(WO_HAS_FIELD(wo_quant_v1, q->struct_size, linear_fused) && q->linear_fused);
  if (const char *v = non_default_gemv()) GTEST_SKIP() << "WORKER_QUANT_GEMV=" << v << ": variant 5 only";
  const bool staging = wo::staged::enabled();
  const struct {
    uint32_t type;
    int64_t rows, cols;
    bool must;
  } cases[] = {{wo::ggml::Q5_0, 4864, 896, true},
               {wo::ggml::Q4_K, 8192, 3072, true},
               {wo::ggml::Q8_0, 4864, 896, false},
               {wo::ggml::Q6_K, 4864, 896, false},
               {wo::ggml::Q5_0, 128, 896, false}};
  const std::set<uint32_t> types(kPlugin.types.begin(), kPlugin.types.end());
  for (const auto &c : cases) {
    if (!types.count(c.type)) continue;
    const char *tn = wo::ggml::type_name(c.type);
    const int64_t cols = valid_cols(c.type, c.cols); // (Q6_K: whole 256-blocks)
    const std::string what = std::string(tn) + " " + std::to_string(c.rows) + "x" + std::to_string(cols);
    std::unique_ptr<DeviceArray<uint8_t>> w[2];
    wo_tensor t[2];
    for (int i = 0; i < 2; ++i) {
      const auto raw = random_blocks(c.type, c.rows, cols, rng());
      w[i] = std::make_unique<DeviceArray<uint8_t>>(raw.size());
      w[i]->upload(raw.data(), raw.size());
      t[i] = make_tensor(c.type, w[i]->get(), cols, c.rows);
    }
    const wo_tensor *gu[2] = {&t[0], &t[1]};
    const auto xf = normal_floats(static_cast<size_t>(cols), rng(), 3.0f);
    const auto gf = normal_floats(static_cast<size_t>(cols), rng());
    DeviceArray<float> x(cols), g(cols), y(c.rows), y_ref(c.rows);
    x.upload(xf.data(), xf.size());
    g.upload(gf.data(), gf.size());
    const int64_t nb = wo::staged::row_bytes(c.rows);
    DeviceArray<uint8_t> st(nb);
    const std::vector<uint8_t> poison(static_cast<size_t>(nb), 0x5A);
    const std::vector<float> sentinel(static_cast<size_t>(c.rows), 7.0f);
    st.upload(poison.data(), poison.size());
    y.upload(sentinel.data(), sentinel.size());
    wo_linear_fusion f = wo::fusion_norm(g.get(), 1e-5f);
    void *ty[1] = {y_ref.get()};
    ASSERT_EQ(
        q->linear_fused(dev->host(), WO_LINEAR_SWIGLU, 2, gu, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32, 1, &f),
        WO_OK)
        << what << ": " << q->last_error();
    f.y_staged = st.get();
    ty[0] = y.get();
    const wo_status s =
        q->linear_fused(dev->host(), WO_LINEAR_SWIGLU, 2, gu, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32, 1, &f);
    dev->sync();
    if (c.must && staging) ASSERT_EQ(s, WO_OK) << what << ": " << q->last_error();
    if (!staging) EXPECT_EQ(s, WO_ERR_UNSUPPORTED) << what << ": WORKER_STAGED_X=0 stages nothing";
    if (s != WO_OK) {
      ASSERT_EQ(s, WO_ERR_UNSUPPORTED) << what << ": " << q->last_error();
      EXPECT_EQ(y.download(static_cast<size_t>(c.rows)), sentinel) << what << ": declined, yet y was written";
      EXPECT_EQ(st.download(static_cast<size_t>(nb)), poison)
          << what << ": declined, yet the staged row was written";
      continue;
    }
    const auto got = y.download(static_cast<size_t>(c.rows)),
               want = y_ref.download(static_cast<size_t>(c.rows));
    EXPECT_EQ(got, want) << what << ": the output with a staged copy";
    std::vector<uint8_t> staged(static_cast<size_t>(nb));
    wo::staged::stage_row_host(want.data(), c.rows, staged.data());
    EXPECT_EQ(st.download(static_cast<size_t>(nb)), staged) << what << ": the staged row";
    std::printf("[ staged   ] %s SwiGLU output staged by the GEMV\n", what.c_str());
  }
}

// linear_fused (SDK 1.4) gives the results of the separate steps it replaces, for every
// block-quantized type: the norm prologue those of the SDK's rms_norm kernel followed by the
// projection (a stack of weights, one weight, or gate/up/SiLU) within kNormFoldTolerance (bit for
// bit with WORKER_NORM_LATE=0), the epilogue exactly those of the projection, add_bias and the
// residual add. Requests it cannot serve decline with nothing written.
TEST_F(GpuCodec, LinearFusedEqualsTheSeparateSteps) {
  ASSERT_TRUE(WO_HAS_FIELD(wo_quant_v1, q->struct_size, linear_fused) && q->linear_fused);
  if (const char *v = non_default_gemv())
    GTEST_SKIP() << "WORKER_QUANT_GEMV=" << v
                 << ": only the default GEMV (variant 5) and variant 3 have the fused pass";
  const cudaStream_t s = dev->stream();
  for (const LaunchCase &lc : kLaunchCases)
    for (uint32_t type : kPlugin.types) {
      const char *tn = wo::ggml::type_name(type);
      const int64_t cols = valid_cols(type, lc.cols);
      const int64_t rows[2] = {lc.rows[0] + 104, lc.rows[2]}; // partial CTAs and groups
      std::unique_ptr<DeviceArray<uint8_t>> w[2];
      wo_tensor t[2];
      const wo_tensor *tw[2];
      for (int i = 0; i < 2; ++i) {
        const auto raw = random_blocks(type, rows[i], cols, rng());
        w[i] = std::make_unique<DeviceArray<uint8_t>>(raw.size());
        w[i]->upload(raw.data(), raw.size());
        t[i] = make_tensor(type, w[i]->get(), cols, rows[i]);
        tw[i] = &t[i];
      }
      auto xf = normal_floats(static_cast<size_t>(cols), rng(), 3.0f); // a residual row
      auto gf = normal_floats(static_cast<size_t>(cols), rng());       // the norm's weight
      const auto bf = normal_floats(static_cast<size_t>(rows[0]), rng());
      const auto y0 = normal_floats(static_cast<size_t>(rows[0]), rng(), 5.0f); // the residual it adds to
      DeviceArray<float> x(cols), g(cols), h(cols), bias(rows[0]);
      DeviceArray<float> y[2] = {DeviceArray<float>(rows[0]), DeviceArray<float>(rows[1])};
      DeviceArray<float> ref[2] = {DeviceArray<float>(rows[0]), DeviceArray<float>(rows[1])};
      x.upload(xf.data(), xf.size());
      g.upload(gf.data(), gf.size());
      bias.upload(bf.data(), bf.size());
      const float eps = 1e-5f;
      wo_linear_fusion norm{};
      norm.struct_size = sizeof norm;
      norm.norm_weight = g.get();
      norm.norm_eps = eps;
      void *ty[2] = {y[0].get(), y[1].get()};
      const bool block_type = wo::ggml::type_info(type)->block_elems > 1;
      const bool declines = stack_declines(type, cols, {rows[0], rows[1]});
      const wo_status st = q->linear_fused(dev->host(), WO_LINEAR_STACK, 2, tw, x.get(), WO_DTYPE_F32, ty,
                                           WO_DTYPE_F32, 1, &norm);
      if (!block_type) {
        EXPECT_EQ(st, WO_ERR_UNSUPPORTED) << tn << ": plain types have no int8 GEMV";
        continue;
      }
      ASSERT_EQ(st, declines ? WO_ERR_UNSUPPORTED : WO_OK) << tn << ": " << q->last_error();
      // The steps apart: the norm kernel, then one linear per weight.
      ASSERT_EQ(wo::kernels::rms_norm(x.get(), g.get(), h.get(), 1, cols, eps, s), cudaSuccess);
      for (int i = 0; i < 2; ++i)
        ASSERT_EQ(q->linear(dev->host(), tw[i], h.get(), WO_DTYPE_F32, ref[i].get(), WO_DTYPE_F32, 1), WO_OK);
      dev->sync();
      for (int i = 0; i < 2 && !declines; ++i)
        expect_norm_fold(y[i].download(rows[i]), ref[i].download(rows[i]),
                         std::string(tn) + " stack+norm, weight " + std::to_string(i));

      // One weight with the norm: within the fold's tolerance of the separate steps, and bit for bit
      // the rows the stack gave it (a row's dot depends only on its weights and x, in either mode).
      const auto stacked = y[1].download(rows[1]);
      ASSERT_EQ(q->linear_fused(dev->host(), WO_LINEAR_STACK, 1, tw + 1, x.get(), WO_DTYPE_F32, ty + 1,
                                WO_DTYPE_F32, 1, &norm),
                WO_OK)
          << q->last_error();
      dev->sync();
      const auto alone = y[1].download(rows[1]);
      expect_norm_fold(alone, ref[1].download(rows[1]), std::string(tn) + " one weight+norm");
      if (!declines)
        EXPECT_EQ(alone, stacked) << tn << ": a weight's rows differ stacked and alone, with the norm";

      // Bias and residual add: y = y0 + (W x + b), as linear, add_bias and add compute it.
      y[0].upload(y0.data(), y0.size());
      wo_linear_fusion epi{};
      epi.struct_size = sizeof epi;
      epi.bias = bias.get();
      epi.accumulate = 1;
      ASSERT_EQ(q->linear_fused(dev->host(), WO_LINEAR_STACK, 1, tw, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32,
                                1, &epi),
                WO_OK)
          << q->last_error();
      ASSERT_EQ(q->linear(dev->host(), tw[0], x.get(), WO_DTYPE_F32, ref[0].get(), WO_DTYPE_F32, 1), WO_OK);
      dev->sync();
      {
        const auto got = y[0].download(rows[0]), o = ref[0].download(rows[0]);
        std::vector<float> want(o.size());
        for (size_t r = 0; r < want.size(); ++r)
          want[r] = y0[r] + (o[r] + bf[r]);
        EXPECT_EQ(got, want) << tn << " bias+accumulate";
      }

      // SwiGLU folded into the projection (op WO_LINEAR_GLU, SDK 1.5) with the residual add:
      // y = y0 + W (silu(x) * up), as the swiglu kernel, linear and the add compute it.
      {
        const auto uf = normal_floats(static_cast<size_t>(cols), rng());
        DeviceArray<float> up(cols), act(cols);
        up.upload(uf.data(), uf.size());
        y[0].upload(y0.data(), y0.size());
        wo_linear_fusion glu{};
        glu.struct_size = sizeof glu;
        glu.accumulate = 1;
        glu.glu_up = up.get();
        ASSERT_EQ(q->linear_fused(dev->host(), WO_LINEAR_GLU, 1, tw, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32,
                                  1, &glu),
                  WO_OK)
            << q->last_error();
        ASSERT_EQ(wo::kernels::swiglu(x.get(), up.get(), act.get(), 1, cols, s), cudaSuccess);
        ASSERT_EQ(q->linear(dev->host(), tw[0], act.get(), WO_DTYPE_F32, ref[0].get(), WO_DTYPE_F32, 1),
                  WO_OK);
        dev->sync();
        const auto got = y[0].download(rows[0]), o = ref[0].download(rows[0]);
        std::vector<float> want(o.size());
        for (size_t r = 0; r < want.size(); ++r)
          want[r] = y0[r] + o[r];
        EXPECT_EQ(got, want) << tn << " glu+accumulate";
        // Refused: GLU without glu_up, or with a norm.
        EXPECT_EQ(q->linear_fused(dev->host(), WO_LINEAR_GLU, 1, tw, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32,
                                  1, &norm),
                  WO_ERR_INVALID_ARGUMENT);
        glu.norm_weight = g.get();
        EXPECT_EQ(q->linear_fused(dev->host(), WO_LINEAR_GLU, 1, tw, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32,
                                  1, &glu),
                  WO_ERR_INVALID_ARGUMENT);
      }

      // Gate, up and SiLU with the norm: the norm kernel, the two linears and the swiglu kernel.
      {
        const wo_tensor gate = make_tensor(type, w[0]->get(), cols, rows[1]);
        const wo_tensor *gu[2] = {&gate, tw[1]};
        ASSERT_EQ(q->linear_fused(dev->host(), WO_LINEAR_SWIGLU, 2, gu, x.get(), WO_DTYPE_F32, ty + 1,
                                  WO_DTYPE_F32, 1, &norm),
                  WO_OK)
            << tn << " swiglu+norm: " << q->last_error();
        DeviceArray<float> yg(rows[1]), yu(rows[1]);
        ASSERT_EQ(q->linear(dev->host(), &gate, h.get(), WO_DTYPE_F32, yg.get(), WO_DTYPE_F32, 1), WO_OK);
        ASSERT_EQ(q->linear(dev->host(), tw[1], h.get(), WO_DTYPE_F32, yu.get(), WO_DTYPE_F32, 1), WO_OK);
        ASSERT_EQ(wo::kernels::swiglu(yg.get(), yu.get(), ref[1].get(), 1, rows[1], s), cudaSuccess);
        dev->sync();
        expect_norm_fold(y[1].download(rows[1]), ref[1].download(rows[1]),
                         std::string(tn) + " swiglu+norm" +
                             (unit_gemv_weight(type, rows[1], cols) ? " (units)" : ""));
      }

      // Declined with nothing written: several tokens, F16 activations under a norm, a row longer than
      // the norm's register partition. Refused: a bias over two weights.
      const std::vector<float> sentinel(static_cast<size_t>(rows[0]), 7.0f);
      y[0].upload(sentinel.data(), sentinel.size());
      EXPECT_EQ(q->linear_fused(dev->host(), WO_LINEAR_STACK, 1, tw, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32,
                                2, &norm),
                WO_ERR_UNSUPPORTED);
      EXPECT_EQ(q->linear_fused(dev->host(), WO_LINEAR_STACK, 1, tw, x.get(), WO_DTYPE_F16, ty, WO_DTYPE_F32,
                                1, &norm),
                WO_ERR_UNSUPPORTED);
      const int64_t long_cols = valid_cols(type, 4608);
      DeviceArray<float> xl(long_cols), gl(long_cols);
      const auto xlf = normal_floats(static_cast<size_t>(long_cols), rng());
      xl.upload(xlf.data(), xlf.size());
      gl.upload(xlf.data(), xlf.size());
      const wo_tensor wide = make_tensor(type, w[0]->get(), long_cols, 8);
      const wo_tensor *tw_wide = &wide;
      wo_linear_fusion norm_wide = norm;
      norm_wide.norm_weight = gl.get();
      if (long_cols > wo::rmsnorm::kMaxCols)
        EXPECT_EQ(q->linear_fused(dev->host(), WO_LINEAR_STACK, 1, &tw_wide, xl.get(), WO_DTYPE_F32, ty,
                                  WO_DTYPE_F32, 1, &norm_wide),
                  WO_ERR_UNSUPPORTED)
            << long_cols << " columns";
      EXPECT_EQ(q->linear_fused(dev->host(), WO_LINEAR_STACK, 2, tw, x.get(), WO_DTYPE_F32, ty, WO_DTYPE_F32,
                                1, &epi),
                WO_ERR_INVALID_ARGUMENT);
      dev->sync();
      EXPECT_EQ(y[0].download(sentinel.size()), sentinel)
          << tn << ": a declined linear_fused wrote its output";
    }
  print_norm_fold_worst();
}

// linear_fused over a stack of two types (SDK 1.8): every pair of this codec's block types, in
// the order of a q/k/v stack ({a, a, b}) and out of it ({b, a, a}, {a, b, a}), at Qwen2.5-0.5B's
// q/k/v shape and a larger one. A stack the codec takes gives the norm kernel's and one linear per
// weight's results (expect_norm_fold); one it declines answers WO_ERR_UNSUPPORTED with nothing
// written.
// Qwen2.5-0.5B's Q4_K_M stack (Q5_0 q and k, Q8_0 v at 896 columns) must be taken: it is what the
// mixed pass exists for (one launch instead of two per layer).
TEST_F(GpuCodec, LinearFusedMixedStackEqualsItsRunsOrDeclines) {
  ASSERT_TRUE(WO_HAS_FIELD(wo_quant_v1, q->struct_size, linear_fused) && q->linear_fused);
  if (const char *v = non_default_gemv())
    GTEST_SKIP() << "WORKER_QUANT_GEMV=" << v << ": only variants 3 and 5 have the fused pass";
  const cudaStream_t s = dev->stream();
  std::vector<uint32_t> block_types;
  for (uint32_t type : kPlugin.types)
    if (wo::ggml::type_info(type)->block_elems > 1) block_types.push_back(type);
  int taken = 0, qwen_taken = 0;
  for (const LaunchCase &lc : kLaunchCases)
    for (uint32_t a : block_types)
      for (uint32_t b : block_types) {
        const int64_t cols = valid_cols(a, lc.cols);
        if (a == b || valid_cols(b, lc.cols) != cols) continue; // one row length for the stack
        const auto xf = normal_floats(static_cast<size_t>(cols), rng(), 3.0f);
        const auto gf = normal_floats(static_cast<size_t>(cols), rng());
        DeviceArray<float> x(cols), g(cols), h(cols);
        x.upload(xf.data(), xf.size());
        g.upload(gf.data(), gf.size());
        wo_linear_fusion norm{};
        norm.struct_size = sizeof norm;
        norm.norm_weight = g.get();
        norm.norm_eps = 1e-6f;
        ASSERT_EQ(wo::kernels::rms_norm(x.get(), g.get(), h.get(), 1, cols, norm.norm_eps, s), cudaSuccess);
        const uint32_t orders[3][3] = {{a, a, b}, {b, a, a}, {a, b, a}};
        for (const auto &types : orders) {
          const std::string what = std::string(wo::ggml::type_name(types[0])) + "," +
                                   wo::ggml::type_name(types[1]) + "," + wo::ggml::type_name(types[2]) +
                                   " x " + std::to_string(cols);
          std::unique_ptr<DeviceArray<uint8_t>> w[3];
          std::unique_ptr<DeviceArray<float>> y[3], ref[3];
          wo_tensor t[3];
          const wo_tensor *tw[3];
          void *ty[3];
          for (int i = 0; i < 3; ++i) {
            const int64_t rows = lc.rows[i];
            const auto raw = random_blocks(types[i], rows, cols, rng());
            w[i] = std::make_unique<DeviceArray<uint8_t>>(raw.size());
            w[i]->upload(raw.data(), raw.size());
            y[i] = std::make_unique<DeviceArray<float>>(static_cast<size_t>(rows));
            ref[i] = std::make_unique<DeviceArray<float>>(static_cast<size_t>(rows));
            const std::vector<float> sentinel(static_cast<size_t>(rows), 7.0f);
            y[i]->upload(sentinel.data(), sentinel.size());
            t[i] = make_tensor(types[i], w[i]->get(), cols, rows);
            tw[i] = &t[i];
            ty[i] = y[i]->get();
          }
          const wo_status st = q->linear_fused(dev->host(), WO_LINEAR_STACK, 3, tw, x.get(), WO_DTYPE_F32, ty,
                                               WO_DTYPE_F32, 1, &norm);
          ASSERT_TRUE(st == WO_OK || st == WO_ERR_UNSUPPORTED) << what << ": " << q->last_error();
          const bool qwen = lc.cols == 896 && types[0] == wo::ggml::Q5_0 && types[1] == wo::ggml::Q5_0 &&
                            types[2] == wo::ggml::Q8_0;
          if (qwen) EXPECT_EQ(st, WO_OK) << what << ": Qwen2.5's mixed q/k/v must run in one pass";
          for (int i = 0; i < 3; ++i)
            ASSERT_EQ(q->linear(dev->host(), tw[i], h.get(), WO_DTYPE_F32, ref[i]->get(), WO_DTYPE_F32, 1),
                      WO_OK)
                << what << ": " << q->last_error();
          dev->sync();
          for (int i = 0; i < 3; ++i) {
            const auto got = y[i]->download(lc.rows[i]);
            if (st == WO_OK)
              expect_norm_fold(got, ref[i]->download(lc.rows[i]),
                               what + ", weight " + std::to_string(i) + ": one pass differs");
            else
              EXPECT_EQ(got, std::vector<float>(got.size(), 7.0f))
                  << what << ": declined but wrote weight " << i;
          }
          taken += st == WO_OK;
          qwen_taken += qwen && st == WO_OK;
        }
      }
  std::printf("[ mixed    ] %d stacks taken in one pass (Qwen2.5's: %d)\n", taken, qwen_taken);
  print_norm_fold_worst();
}

TEST_F(GpuCodec, DecodeIsCapturableAndNeedsNoScratch) {
  const uint32_t type = kPlugin.types.back();
  const int64_t rows = 1000, cols = valid_cols(type, 1024);
  const auto raw = random_blocks(type, rows, cols, rng());
  DeviceArray<uint8_t> w(raw.size());
  w.upload(raw.data(), raw.size());
  const wo_tensor t = make_tensor(type, w.get(), cols, rows);
  const auto xf = normal_floats(cols, rng());
  DeviceArray<float> x(cols), y(rows), y2(rows);
  x.upload(xf.data(), cols);
  const size_t before = dev->scratch_calls();
  ASSERT_EQ(q->linear(dev->host(), &t, x.get(), WO_DTYPE_F32, y.get(), WO_DTYPE_F32, 1), WO_OK)
      << q->last_error();
  EXPECT_EQ(dev->scratch_calls(), before) << "the n_tokens=1 path asked for scratch";
  dev->sync();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(dev->stream(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const wo_status st = q->linear(dev->host(), &t, x.get(), WO_DTYPE_F32, y2.get(), WO_DTYPE_F32, 1);
  ASSERT_EQ(cudaStreamEndCapture(dev->stream(), &graph), cudaSuccess);
  ASSERT_EQ(st, WO_OK) << q->last_error();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, dev->stream()), cudaSuccess);
  dev->sync();
  EXPECT_EQ(y.download(rows), y2.download(rows)) << "graph replay differs from the direct launch";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

} // namespace
} // namespace wo::quant::testing
