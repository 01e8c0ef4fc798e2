// Where GPU tests find things, and whether there is a GPU at all. Paths come from the environment
// first (the device machine has other paths than the build machine), then from compile-time
// defaults that worker_add_test defines.
#pragma once

#include <cuda_runtime_api.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace wo::testing {

inline std::string env_or(const char *name, const std::string &dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::string(v) : dflt;
}

inline std::string fixtures_dir() { return env_or("WORKER_FIXTURES_DIR", WORKER_FIXTURES_DIR_DEFAULT); }
inline std::string plugin_dir() { return env_or("WORKER_PLUGIN_DIR", WORKER_PLUGIN_DIR_DEFAULT); }
inline std::string models_dir() { return env_or("WORKER_MODELS_DIR", fixtures_dir() + "/models"); }
inline std::string reference_root() { return env_or("WORKER_REFERENCE_DIR", fixtures_dir() + "/reference"); }
inline std::string worker_bin() {
  return env_or("WORKER_ORCD_BIN", std::string(WORKER_BUILD_DIR) + "/bin/worker-orcd");
}

inline bool has_cuda_device() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
}

// Free bytes on the current device (creates the context on first use).
inline uint64_t free_vram() {
  size_t f = 0, t = 0;
  if (cudaMemGetInfo(&f, &t) != cudaSuccess) return 0;
  return f;
}

inline bool file_exists(const std::string &p) {
  FILE *f = std::fopen(p.c_str(), "rb");
  if (f) std::fclose(f);
  return f != nullptr;
}

// The index of the largest logit (the lowest on ties), as greedy sampling picks.
inline int32_t argmax(const float *v, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return static_cast<int32_t>(best);
}
inline int32_t argmax(const std::vector<float> &v) {
  return argmax(v.data(), static_cast<int64_t>(v.size()));
}

// A fixture model's name as a gtest parameter name (letters, digits and '_').
struct FixtureName {
  template <class Info> std::string operator()(const Info &info) const {
    std::string n = info.param;
    for (char &c : n)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return n;
  }
};

} // namespace wo::testing

#define WO_SKIP_WITHOUT_GPU()                                                                                \
  do {                                                                                                       \
    if (!::wo::testing::has_cuda_device()) GTEST_SKIP() << "no CUDA device on this host";                    \
  } while (0)
