// The device layer on a real GPU: VRAM accounting by kind with peaks and a cap, chunked upload
// through pinned staging (bytes identical after the round trip), residency checks that tell device
// memory from managed and host memory, the periodic monitor, and the device check's messages.
#include "gpu_test_env.hpp"

#include "device/chunked_upload.hpp"
#include "device/device_context.hpp"
#include "device/residency.hpp"
#include "device/vram_accounting.hpp"

#include <worker/sdk.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

namespace wo::testing {
namespace {

using wo::device::VramAccountant;

std::mt19937_64 fresh_rng() {
  std::random_device rd;
  return std::mt19937_64((static_cast<uint64_t>(rd()) << 32) | rd());
}

TEST(VramAccountant, CountsEveryKindWithPeaks) {
  WO_SKIP_WITHOUT_GPU();
  VramAccountant v;
  void *w = nullptr, *k = nullptr, *s = nullptr;
  ASSERT_EQ(v.alloc(3 << 20, WO_VRAM_WEIGHTS, &w, "w"), WO_OK);
  ASSERT_EQ(v.alloc(1 << 20, WO_VRAM_KV_CACHE, &k, "k"), WO_OK);
  ASSERT_EQ(v.alloc(5 << 20, WO_VRAM_SCRATCH, &s, "s"), WO_OK);
  auto st = v.stats();
  EXPECT_EQ(st.current[WO_VRAM_WEIGHTS], 3u << 20);
  EXPECT_EQ(st.current[WO_VRAM_KV_CACHE], 1u << 20);
  EXPECT_EQ(st.current[WO_VRAM_SCRATCH], 5u << 20);
  EXPECT_EQ(st.total_current, 9u << 20);
  EXPECT_EQ(st.allocations, 3u);
  EXPECT_TRUE(v.free(s));
  EXPECT_FALSE(v.free(reinterpret_cast<void *>(0x1000))) << "a pointer it never gave out";
  st = v.stats();
  EXPECT_EQ(st.current[WO_VRAM_SCRATCH], 0u);
  EXPECT_EQ(st.peak[WO_VRAM_SCRATCH], 5u << 20);
  EXPECT_EQ(st.total_peak, 9u << 20);
  v.free_all();
  EXPECT_EQ(v.stats().total_current, 0u);
  EXPECT_EQ(v.stats().allocations, 0u);
}

TEST(VramAccountant, CapRefusesWithoutAllocating) {
  WO_SKIP_WITHOUT_GPU();
  VramAccountant v;
  v.set_cap(4 << 20);
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(v.alloc(3 << 20, WO_VRAM_WEIGHTS, &a), WO_OK);
  const uint64_t free_before = free_vram();
  EXPECT_EQ(v.alloc(2 << 20, WO_VRAM_KV_CACHE, &b, "kv"), WO_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(b, nullptr);
  EXPECT_NE(v.last_error().find("budget"), std::string::npos) << v.last_error();
  EXPECT_NE(v.last_error().find("kv"), std::string::npos) << v.last_error();
  EXPECT_EQ(v.stats().current[WO_VRAM_KV_CACHE], 0u);
  EXPECT_EQ(free_vram(), free_before);
}

TEST(VramAccountant, ImpossibleAllocationIsOutOfMemoryAndNotSticky) {
  WO_SKIP_WITHOUT_GPU();
  VramAccountant v;
  void *p = nullptr;
  EXPECT_EQ(v.alloc(size_t{1} << 50, WO_VRAM_SCRATCH, &p, "huge"), WO_ERR_OUT_OF_MEMORY);
  EXPECT_NE(v.last_error().find("cudaMalloc"), std::string::npos) << v.last_error();
  // The device still works afterwards.
  ASSERT_EQ(v.alloc(1 << 20, WO_VRAM_SCRATCH, &p), WO_OK);
  EXPECT_EQ(cudaMemset(p, 1, 1 << 20), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Sizes around the chunk boundary; the source is overwritten right after upload() returns, so a
// copy that read the mmap late (instead of the staged bytes) would show up as a mismatch.
TEST(ChunkedUpload, RandomBytesSurviveTheRoundTrip) {
  WO_SKIP_WITHOUT_GPU();
  auto rng = fresh_rng();
  const size_t chunk = 64 << 10;
  const size_t sizes[] = {1, chunk - 1, chunk, 3 * chunk + 777, 17 * chunk + 5};
  VramAccountant v;
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  {
    wo::device::ChunkedUploader up(s, chunk);
    for (size_t n : sizes) {
      SCOPED_TRACE("bytes " + std::to_string(n));
      std::vector<uint8_t> src(n);
      for (auto &b : src)
        b = static_cast<uint8_t>(rng());
      const std::vector<uint8_t> expect = src;
      void *d = nullptr;
      ASSERT_EQ(v.alloc(n, WO_VRAM_WEIGHTS, &d), WO_OK);
      const uint64_t chunks_before = up.chunks_copied();
      uint64_t last_report = 0;
      up.upload(src.data(), d, n, "test", [&](uint64_t done) {
        EXPECT_GT(done, last_report);
        last_report = done;
      });
      std::fill(src.begin(), src.end(), uint8_t{0xAB});
      up.finish();
      EXPECT_EQ(last_report, n);
      EXPECT_EQ(up.chunks_copied() - chunks_before, (n + chunk - 1) / chunk);
      std::vector<uint8_t> back(n);
      ASSERT_EQ(cudaMemcpy(back.data(), d, n, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(back, expect);
      v.free(d);
    }
  }
  cudaStreamDestroy(s);
}

TEST(Residency, DeviceMemoryPassesManagedAndHostFail) {
  WO_SKIP_WITHOUT_GPU();
  int dev = 0;
  cudaGetDevice(&dev);
  void *d = nullptr, *m = nullptr, *h = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 1 << 16), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&m, 1 << 16), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&h, 1 << 16, cudaHostAllocDefault), cudaSuccess);

  auto ok =
      wo::device::check_residency({{"a", d, 1 << 16}, {"b", static_cast<uint8_t *>(d) + 4096, 256}}, dev);
  EXPECT_TRUE(ok.ok) << ok.failure;
  EXPECT_EQ(ok.checked, 2u);

  auto managed = wo::device::check_residency({{"a", d, 1 << 16}, {"managed_w", m, 1 << 16}}, dev);
  EXPECT_FALSE(managed.ok);
  EXPECT_NE(managed.failure.find("managed_w"), std::string::npos) << managed.failure;
  EXPECT_NE(managed.failure.find("managed"), std::string::npos) << managed.failure;

  auto host = wo::device::check_residency({{"host_w", h, 1 << 16}}, dev);
  EXPECT_FALSE(host.ok);
  EXPECT_NE(host.failure.find("host_w"), std::string::npos) << host.failure;

  auto null_ptr = wo::device::check_residency({{"gone", nullptr, 16}}, dev);
  EXPECT_FALSE(null_ptr.ok);

  cudaFree(d);
  cudaFree(m);
  cudaFreeHost(h);
}

TEST(Residency, MonitorRunsPeriodicallyAndReportsFailures) {
  WO_SKIP_WITHOUT_GPU();
  int dev = 0;
  cudaGetDevice(&dev);
  void *m = nullptr;
  ASSERT_EQ(cudaMallocManaged(&m, 4096), cudaSuccess);
  std::atomic<int> failures{0};
  {
    wo::device::ResidencyMonitor mon(
        std::chrono::milliseconds(10),
        [&] {
          return wo::device::check_residency({{"w", m, 4096}}, dev);
        },
        [&](const wo::device::ResidencyResult &r) {
          if (!r.ok) ++failures;
        });
    for (int i = 0; i < 200 && mon.runs() < 3; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_GE(mon.runs(), 3u);
  } // destruction stops the thread promptly
  EXPECT_GE(failures.load(), 3);
  cudaFree(m);
}

TEST(DeviceContext, RejectsAMissingDeviceNamingTheCount) {
  WO_SKIP_WITHOUT_GPU();
  VramAccountant v;
  const int n = wo::device::device_count();
  try {
    wo::device::DeviceContext ctx(n, v);
    FAIL() << "device " << n << " does not exist";
  } catch (const wo::Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("--gpu-device " + std::to_string(n)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(n) + " CUDA device"), std::string::npos) << e.what();
  }
  EXPECT_EQ(v.stats().total_peak, 0u);
}

TEST(DeviceContext, OpensDeviceZeroAndAccountsTheCublasWorkspace) {
  WO_SKIP_WITHOUT_GPU();
  VramAccountant v;
  {
    wo::device::DeviceContext ctx(0, v);
    EXPECT_FALSE(ctx.props().name.empty());
    EXPECT_GE(ctx.props().sm_major, 7);
    EXPECT_NE(ctx.stream(), nullptr);
    EXPECT_EQ(v.stats().total_current, 0u) << "the context allocates nothing before create_cublas";
    ctx.create_cublas();
    EXPECT_NE(ctx.cublas(), nullptr);
    EXPECT_EQ(v.stats().current[WO_VRAM_SCRATCH], wo::device::DeviceContext::kCublasWorkspaceBytes);
    EXPECT_GT(ctx.mem_info().free_bytes, 0u);
    ctx.synchronize();
  }
  EXPECT_EQ(v.stats().total_current, 0u);
}

} // namespace
} // namespace wo::testing
