// The bytes gguf-synth writes for a run of rows, in the tensor's own ggml type: float types come
// from the float fill, block types are made directly as blocks (blocks.hpp).
#pragma once

#include "presets.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace wo::synth {

// Empty when generate_rows can make tensor `t`, else why not (checked before the file is created).
std::string cannot_generate(const SynthTensor &t);

// Rows [row0, row0 + n_rows) of tensor `index`: ggml row_bytes(type, ne[0]) * n_rows bytes at `out`.
// `scratch` holds floats for F16/BF16. Depends on (seed, index, row0, n_rows) only, never on the
// thread that runs it.
void generate_rows(const SynthTensor &t, uint64_t seed, size_t index, int64_t row0, int64_t n_rows,
                   uint8_t *out, std::vector<float> &scratch);

} // namespace wo::synth
