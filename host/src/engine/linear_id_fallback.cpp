#include "engine/linear_id_fallback.hpp"

#include "device/cuda_check.hpp"

#include <worker/sdk.hpp>

#include <string>
#include <vector>

namespace wo::engine {

namespace {
size_t dtype_bytes(wo_dtype t) {
  switch (t) {
  case WO_DTYPE_F32: return 4;
  case WO_DTYPE_F16: return 2;
  default: return 0; // I32 is not an activation type for linear
  }
}
} // namespace

wo_status linear_id_by_rows(const wo_host *host, const wo_quant_v1 *codec, cudaStream_t stream,
                            const wo_tensor *w, const void *x, wo_dtype x_type, int64_t x_slots, void *y,
                            wo_dtype y_type, int64_t n_tokens, const int32_t *ids, int64_t n_slots) {
  const std::string where =
      std::string("linear_id fallback on tensor '") + (w && w->name ? w->name : "?") + "'";
  if (!w || !codec || !codec->linear)
    throw Error(WO_ERR_INVALID_ARGUMENT, where + ": no weight or no codec linear");
  if (n_tokens < 0 || n_slots <= 0 || (x_slots != 1 && x_slots != n_slots))
    throw Error(WO_ERR_INVALID_ARGUMENT,
                where + ": expected n_tokens >= 0, n_slots > 0 and x_slots 1 or " + std::to_string(n_slots) +
                    ", found n_tokens " + std::to_string(n_tokens) + ", n_slots " + std::to_string(n_slots) +
                    ", x_slots " + std::to_string(x_slots));
  const size_t xb = dtype_bytes(x_type), yb = dtype_bytes(y_type);
  if (!xb || !yb)
    throw Error(WO_ERR_INVALID_ARGUMENT, where + ": expected F32 or F16 activations, found dtypes " +
                                             std::to_string(x_type) + " -> " + std::to_string(y_type));
  const int64_t cols = w->ne[0], rows = w->ne[1], n_expert = w->ne[2];
  const uint64_t expert_bytes = w->nb1 * static_cast<uint64_t>(rows);
  std::vector<int32_t> h_ids(static_cast<size_t>(n_tokens * n_slots));
  if (!h_ids.empty()) {
    wo::device::cuda_check(
        cudaMemcpyAsync(h_ids.data(), ids, h_ids.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, stream),
        where + ": copying expert ids");
    wo::device::cuda_check(cudaStreamSynchronize(stream), where + ": copying expert ids");
  }
  wo_tensor view = *w;
  view.n_dims = 2;
  view.ne[2] = 1;
  view.ne[3] = 1;
  view.nbytes = expert_bytes;
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t k = 0; k < n_slots; ++k) {
      const int32_t ex = h_ids[static_cast<size_t>(t * n_slots + k)];
      if (ex < 0 || ex >= n_expert)
        throw Error(WO_ERR_INVALID_ARGUMENT, where + ": expert id " + std::to_string(ex) + " at token " +
                                                 std::to_string(t) + " slot " + std::to_string(k) +
                                                 " outside 0.." + std::to_string(n_expert - 1));
      view.data = static_cast<uint8_t *>(w->data) + expert_bytes * static_cast<uint64_t>(ex);
      view.host_data =
          w->host_data ? static_cast<const uint8_t *>(w->host_data) + expert_bytes * static_cast<uint64_t>(ex)
                       : nullptr;
      const auto *xp = static_cast<const uint8_t *>(x) +
                       static_cast<size_t>((t * x_slots + (x_slots == 1 ? 0 : k)) * cols) * xb;
      auto *yp = static_cast<uint8_t *>(y) + static_cast<size_t>((t * n_slots + k) * rows) * yb;
      const wo_status st = codec->linear(host, &view, xp, x_type, yp, y_type, 1);
      if (st != WO_OK) return st;
    }
  }
  return WO_OK;
}

} // namespace wo::engine
