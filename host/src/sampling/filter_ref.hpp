// CPU reference of the sampling filter: the exact distribution the GPU sampler draws from.
// Used by tests (chi-square against GPU draws) and as executable documentation of the rules.
#pragma once

#include "sampling/sampling_params.hpp"

#include <cstdint>
#include <vector>

namespace wo::sampling {

// Apply the repetition penalty in place: for each distinct id in `history`, a positive logit is
// divided by the penalty and a negative one multiplied by it.
void apply_repetition_penalty(std::vector<float> &logits, const std::vector<int32_t> &history, float penalty);

// Probability of every id after penalty, temperature, top-k, top-p and min-p (zeros outside the
// kept set; sums to 1). For greedy params, a one-hot vector at the argmax (lowest id on ties).
// Rules (all cuts are prefixes of the ids sorted by logit, descending, ties by id ascending):
//   top-k keeps the k best; top-p keeps the shortest prefix whose probability mass, renormalised
//   over the top-k set, reaches p; min-p keeps ids whose probability is >= min_p * p_max.
std::vector<double> filtered_distribution(std::vector<float> logits, const std::vector<int32_t> &history,
                                          const SamplingParams &params);

} // namespace wo::sampling
