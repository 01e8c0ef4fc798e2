#include "device/chunked_upload.hpp"

#include "device/cuda_check.hpp"

#include <algorithm>
#include <cstring>

namespace wo::device {

ChunkedUploader::ChunkedUploader(cudaStream_t stream, size_t chunk_bytes)
    : stream_(stream), chunk_(std::max<size_t>(chunk_bytes, 4096)) {
  try {
    for (int i = 0; i < 2; ++i) {
      cuda_check(cudaHostAlloc(&staging_[i], chunk_, cudaHostAllocDefault),
                 "cudaHostAlloc(upload staging buffer, " + std::to_string(chunk_) + " bytes)");
      cuda_check(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming), "cudaEventCreate(upload)");
    }
  } catch (...) {
    for (int i = 0; i < 2; ++i) {
      if (done_[i]) cudaEventDestroy(done_[i]);
      if (staging_[i]) cudaFreeHost(staging_[i]);
    }
    throw;
  }
}

ChunkedUploader::~ChunkedUploader() {
  for (int i = 0; i < 2; ++i) {
    if (pending_[i]) cudaEventSynchronize(done_[i]);
    cudaEventDestroy(done_[i]);
    cudaFreeHost(staging_[i]);
  }
}

void ChunkedUploader::upload(const void *src, void *dst, size_t bytes, const std::string &what,
                             const std::function<void(uint64_t)> &on_bytes) {
  const auto *s = static_cast<const uint8_t *>(src);
  auto *d = static_cast<uint8_t *>(dst);
  size_t done = 0;
  while (done < bytes) {
    const size_t n = std::min(chunk_, bytes - done);
    const int b = next_;
    next_ ^= 1;
    // The buffer's previous copy must have left it before we overwrite it.
    if (pending_[b]) {
      cuda_check(cudaEventSynchronize(done_[b]), "upload of " + what + ": waiting for a staging buffer");
      pending_[b] = false;
    }
    std::memcpy(staging_[b], s + done, n);
    cuda_check(cudaMemcpyAsync(d + done, staging_[b], n, cudaMemcpyHostToDevice, stream_),
               "upload of " + what + ": cudaMemcpyAsync at offset " + std::to_string(done) + " (" +
                   std::to_string(n) + " bytes)");
    cuda_check(cudaEventRecord(done_[b], stream_), "upload of " + what + ": cudaEventRecord");
    pending_[b] = true;
    done += n;
    ++chunks_;
    if (on_bytes) on_bytes(done);
  }
}

void ChunkedUploader::finish() {
  for (int i = 0; i < 2; ++i) {
    if (pending_[i]) {
      cuda_check(cudaEventSynchronize(done_[i]), "upload: waiting for the last copies");
      pending_[i] = false;
    }
  }
}

} // namespace wo::device
