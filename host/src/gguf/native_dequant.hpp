// CPU conversion to float32 of the tensor types the host reads without a quant plugin (F32, F16,
// BF16): what `dump-tensor` uses before (or instead of) a codec's dequantize_rows.
#pragma once

#include <cstdint>

namespace wo::gguf {

// IEEE half (binary16) to float, exact for every input including subnormals, inf and NaN.
float half_to_float(uint16_t h);
// bfloat16 to float (exact: bf16 is the top half of a float).
float bf16_to_float(uint16_t b);

// True when `type` is converted here.
bool is_native_type(uint32_t type);

// Convert n elements of `type` at src (any alignment) into dst. Returns false for other types.
bool dequantize_native(uint32_t type, const void *src, uint64_t n, float *dst);

} // namespace wo::gguf
