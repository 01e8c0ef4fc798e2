// Seeded random tensor contents, reproducible whatever the thread count: each chunk of rows has
// its own generator, seeded from (seed, tensor index, first row).
#pragma once

#include "presets.hpp"

#include <cstdint>
#include <vector>

namespace wo::synth {

// Fill rows [row0, row0 + n_rows) of tensor `index` (row length ne[0]) as float32.
void fill_rows(const SynthTensor &t, uint64_t seed, size_t index, int64_t row0, int64_t n_rows, float *out);

} // namespace wo::synth
