// Host -> device upload in bounded chunks through two pinned staging buffers (spec M0-W-1010
// upload). While the copy engine moves chunk i out of one buffer, the CPU fills the other with
// chunk i+1 from the memory-mapped file; an event per buffer says when it may be refilled. Pinned
// staging makes the copies truly asynchronous, and the bounded chunk keeps host memory use flat
// (2 x chunk) whatever the model size.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace wo::device {

class ChunkedUploader {
public:
  // chunk_bytes: size of each staging buffer (>= 4 KiB; values below are raised to 4 KiB).
  ChunkedUploader(cudaStream_t stream, size_t chunk_bytes);
  ~ChunkedUploader(); // waits for pending copies, frees the staging buffers
  ChunkedUploader(const ChunkedUploader &) = delete;
  ChunkedUploader &operator=(const ChunkedUploader &) = delete;

  // Copy `bytes` from host memory (e.g. the mmap) to device memory `dst`. Returns once every chunk
  // is enqueued; the last one may still be in flight (finish() waits). `on_bytes` is called after
  // each chunk is staged with the bytes staged so far for this call. `what` names the copy in errors.
  void upload(const void *src, void *dst, size_t bytes, const std::string &what,
              const std::function<void(uint64_t)> &on_bytes = {});
  void finish(); // wait for every enqueued copy; throws WO_ERR_CUDA on failure

  size_t chunk_bytes() const { return chunk_; }
  uint64_t chunks_copied() const { return chunks_; }

private:
  cudaStream_t stream_;
  size_t chunk_;
  void *staging_[2] = {nullptr, nullptr};
  cudaEvent_t done_[2] = {nullptr, nullptr};
  bool pending_[2] = {false, false};
  int next_ = 0;
  uint64_t chunks_ = 0;
};

} // namespace wo::device
