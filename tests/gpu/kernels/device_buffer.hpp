// Test helpers: a typed device buffer, random inputs, a device check, and tolerance comparison.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace wo::kernels::test {

inline bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define WO_REQUIRE_DEVICE()                                                                                  \
  do {                                                                                                       \
    if (!::wo::kernels::test::have_device()) GTEST_SKIP() << "no CUDA device";                               \
  } while (0)

template <class T> class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    EXPECT_EQ(cudaMalloc(&p_, (n ? n : 1) * sizeof(T)), cudaSuccess);
  }
  explicit DeviceBuffer(const std::vector<T> &h) : DeviceBuffer(h.size()) { upload(h); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  T *get() const { return p_; }
  void upload(const std::vector<T> &h) {
    ASSERT_EQ(cudaMemcpy(p_, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> h(n_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }

private:
  T *p_ = nullptr;
  size_t n_;
};

// Fresh random values each run (seeded from the clock; the seed is printed on failure).
inline uint32_t fresh_seed() {
  static std::random_device rd;
  return rd();
}

inline std::vector<float> randn(size_t n, std::mt19937 &rng, float sd = 1.0f, float mean = 0.0f) {
  std::normal_distribution<float> d(mean, sd);
  std::vector<float> v(n);
  for (auto &x : v)
    x = d(rng);
  return v;
}

// Every element within atol + rtol * |ref|; reports the first offender with its index.
inline ::testing::AssertionResult close(const std::vector<float> &got, const std::vector<double> &ref,
                                        double atol, double rtol) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << "size: expected " << ref.size() << ", found " << got.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
    if (!(err <= atol + rtol * std::fabs(ref[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": expected " << ref[i] << ", found " << got[i] << " (|err| " << err
             << " > " << atol << " + " << rtol << "*|ref|)";
  }
  return ::testing::AssertionSuccess();
}

} // namespace wo::kernels::test
