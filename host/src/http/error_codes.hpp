// Stable error codes of the worker's HTTP API (spec M0-W-1500 + WORK-3090) and the HTTP status
// each gets when it is answered before the SSE stream starts. Once `started` has been sent, every
// failure is an SSE `error` event {code, message, retriable} on the 200 stream instead.
//
//   code                status  retriable  when
//   INVALID_REQUEST      400    no         body not JSON / too large / invalid UTF-8, field fails a rule
//   PROMPT_TOO_LONG      400    no         prompt tokens exceed --max-tokens-in or the context length
//   NOT_FOUND            404    no         unknown path
//   METHOD_NOT_ALLOWED   405    no         known path, wrong method (Allow header lists the right one)
//   WORKER_BUSY          503    yes        a job is running (Retry-After: 1)
//   SHUTTING_DOWN        503    no         draining after /shutdown or SIGTERM/SIGINT (Retry-After: 30)
//   CANCELLED            (SSE)  no         /cancel, client disconnect, or the drain deadline (499 pre-stream)
//   INFERENCE_TIMEOUT    (SSE)  yes        --inference-timeout-sec or X-Deadline passed (504 pre-stream)
//   VRAM_OOM             (SSE)  yes        device allocation failed during the job (503 pre-stream)
//   CUDA_ERROR           (SSE)  no         device failure (500 pre-stream)
//   INTERNAL             500    no         anything else
#pragma once

#include <string>

namespace wo::http {

struct ErrorCodeInfo {
  const char *code;
  int http_status;
  bool retriable;
};

// The table above, in order.
const ErrorCodeInfo *error_code_table(size_t *count);

// The entry for code; unknown codes map to INTERNAL's status (500) with retriable=false.
ErrorCodeInfo error_code_info(const std::string &code);

} // namespace wo::http
