// CPU-only build (WORKER_WITH_CUDA=OFF): the plugin still probes, plans, validates weights and
// manages sessions, but cannot compute; forward says so.
#include "instance.hpp"

namespace wo::gpt {

void forward_device(Instance &, const int32_t *, int64_t, int64_t, float *, uint32_t) {
  throw Error(WO_ERR_NO_DEVICE, "forward: the gpt plugin was built without CUDA (WORKER_WITH_CUDA=OFF)");
}

void decode_step_device(Instance &, const int32_t *, const int32_t *, int64_t, float *) {
  throw Error(WO_ERR_NO_DEVICE, "decode_step: the gpt plugin was built without CUDA (WORKER_WITH_CUDA=OFF)");
}

int64_t attention_workspace_floats(const Hparams &, int64_t) { return 0; }

} // namespace wo::gpt
