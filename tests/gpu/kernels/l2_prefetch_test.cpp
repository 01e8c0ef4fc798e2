// The L2 prefetch hint: it writes nothing, it refuses what it cannot do before launching, and it
// runs on a second stream forked from and joined to a captured graph (the llama plugin's decode
// side branch).
#include "device_buffer.hpp"

#include <worker/kernels.hpp>

#include <cstring>

namespace wo::kernels::test {
namespace {

TEST(L2Prefetch, LeavesMemoryAsItWasForAnyAlignmentAndSize) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const auto host = randn(1 << 20, rng); // 4 MiB
  DeviceBuffer<float> buf(host);
  const char *base = reinterpret_cast<const char *>(buf.get());
  L2Ranges r;
  // An unaligned start and odd sizes (each bulk slice is widened to 16 bytes within the lines),
  // a range longer than the threads' slices and one shorter than a line.
  r.p[0] = base + 3, r.bytes[0] = 1000;
  r.p[1] = base + 4096 + 7, r.bytes[1] = 3 * 1024 * 1024 + 5;
  r.p[2] = base + 4 * 1024 * 1024 - 40, r.bytes[2] = 40;
  for (int blocks : {1, 4, 33})
    ASSERT_EQ(l2_prefetch(r, blocks, nullptr), cudaSuccess) << blocks << " blocks";
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto after = buf.download();
  EXPECT_EQ(std::memcmp(after.data(), host.data(), host.size() * sizeof(float)), 0) << "seed " << seed;
}

TEST(L2Prefetch, RefusesBadRangesAndBlockCountsWithoutLaunching) {
  WO_REQUIRE_DEVICE();
  DeviceBuffer<float> buf(std::vector<float>(64, 1.0f));
  L2Ranges r;
  r.p[0] = buf.get(), r.bytes[0] = 256;
  EXPECT_EQ(l2_prefetch(r, 0, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(l2_prefetch(r, 4097, nullptr), cudaErrorInvalidValue);
  L2Ranges no_pointer;
  no_pointer.bytes[1] = 128;
  EXPECT_EQ(l2_prefetch(no_pointer, 4, nullptr), cudaErrorInvalidValue);
  L2Ranges too_long = r;
  too_long.bytes[0] = (uint64_t{1} << 32) + 16;
  EXPECT_EQ(l2_prefetch(too_long, 4, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a refused call must leave no error behind";
  EXPECT_EQ(l2_prefetch(L2Ranges{}, 4, nullptr), cudaSuccess) << "no bytes: nothing to do";
}

TEST(L2Prefetch, RunsAsACapturedGraphsSideBranch) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const auto x = randn(4096, rng);
  DeviceBuffer<float> dx(x), dy(4096);
  cudaStream_t main = nullptr, side = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&main, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), cudaSuccess);
  L2Ranges r;
  r.p[0] = dx.get(), r.bytes[0] = 4096 * sizeof(float);
  // The plugin's pattern: a chain kernel, a fork to the prefetch, more chain kernels, the join.
  ASSERT_EQ(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(scale(dx.get(), dy.get(), 2.0f, 4096, main), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(fork, main), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(side, fork, 0), cudaSuccess);
  ASSERT_EQ(l2_prefetch(r, 4, side), cudaSuccess);
  ASSERT_EQ(add(dy.get(), dy.get(), dx.get(), 4096, main), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(join, side), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(main, join, 0), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(main, &graph), cudaSuccess) << "the side branch must join the capture";
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 3u) << "scale, prefetch, add";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(cudaGraphLaunch(exec, main), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(main), cudaSuccess);
  const auto y = dy.download();
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(y[i], 3.0f * x[i]) << "element " << i << " seed " << seed; // 2x + x: exact in FP32
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(join);
  cudaEventDestroy(fork);
  cudaStreamDestroy(side);
  cudaStreamDestroy(main);
}

} // namespace
} // namespace wo::kernels::test
