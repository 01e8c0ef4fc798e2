// linear_id for quant codecs that do not implement it (wo_quant_v1.linear_id == NULL): one
// linear() per (token, slot) on a one-expert view of the 3-D weight. Slow, but exact, so MoE
// models stay correct with any codec. Semantics as wo_host.linear_id (sdk.h).
#pragma once

#include <worker/sdk.h>

#include <cuda_runtime_api.h>

namespace wo::engine {

// `ids` are in device memory (copied to the host on `stream`, which is synchronized). Throws
// wo::Error for bad arguments (naming the tensor, token and slot); returns the codec's status.
wo_status linear_id_by_rows(const wo_host *host, const wo_quant_v1 *codec, cudaStream_t stream,
                            const wo_tensor *w, const void *x, wo_dtype x_type, int64_t x_slots, void *y,
                            wo_dtype y_type, int64_t n_tokens, const int32_t *ids, int64_t n_slots);

} // namespace wo::engine
