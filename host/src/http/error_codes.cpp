#include "http/error_codes.hpp"

namespace wo::http {
namespace {
const ErrorCodeInfo kTable[] = {
    {"INVALID_REQUEST", 400, false},    {"PROMPT_TOO_LONG", 400, false},  {"NOT_FOUND", 404, false},
    {"METHOD_NOT_ALLOWED", 405, false}, {"WORKER_BUSY", 503, true},       {"SHUTTING_DOWN", 503, false},
    {"CANCELLED", 499, false},          {"INFERENCE_TIMEOUT", 504, true}, {"VRAM_OOM", 503, true},
    {"CUDA_ERROR", 500, false},         {"INTERNAL", 500, false},
};
} // namespace

const ErrorCodeInfo *error_code_table(size_t *count) {
  *count = sizeof kTable / sizeof kTable[0];
  return kTable;
}

ErrorCodeInfo error_code_info(const std::string &code) {
  for (const auto &e : kTable)
    if (code == e.code) return e;
  return {"INTERNAL", 500, false};
}

} // namespace wo::http
