// Quantized tensor contents made directly as blocks: random codes, then block scales chosen so the
// dequantized weights have mean ~0 and standard deviation ~ the tensor's `scale`, as the float
// fill had after quantization. Making floats and quantizing them ran at ~65 MB/s per core; blocks
// are made at ~3 GB/s, which leaves the kernel's copy into the file as the main cost (issue 10).
#pragma once

#include "presets.hpp"

#include <cstdint>

namespace wo::synth {

// True for the block types fill_blocks makes (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, MXFP4).
bool blocks_supported(uint32_t ggml_type);

// Rows [row0, row0 + n_rows) of tensor `index` in its block type, `t.scale` as the target
// standard deviation. Depends on (seed, index, row0, n_rows) only.
void fill_blocks(const SynthTensor &t, uint64_t seed, size_t index, int64_t row0, int64_t n_rows,
                 uint8_t *out);

} // namespace wo::synth
