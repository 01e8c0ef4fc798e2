#include "rows.hpp"

#include "blocks.hpp"
#include "fill.hpp"
#include "quant_common/scalar_convert.hpp"

#include <worker/ggml_types.hpp>

#include <cstring>

namespace wo::synth {
namespace {

namespace G = wo::ggml;

void store_u16(uint8_t *p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xff);
  p[1] = static_cast<uint8_t>(v >> 8);
}

} // namespace

std::string cannot_generate(const SynthTensor &t) {
  const uint32_t type = t.ggml_type;
  if (type == G::F32 || type == G::F16 || type == G::BF16) return {};
  const char *name = G::type_name(type);
  const std::string label = name ? name : "type " + std::to_string(type);
  if (!blocks_supported(type)) return "tensor '" + t.name + "': gguf-synth cannot make " + label + " blocks";
  // Blocks are centred on zero; a norm gain (values near 1) would need an offset they do not model.
  if (t.fill != Fill::normal)
    return "tensor '" + t.name + "': a norm gain must be F32, F16 or BF16, not " + label;
  return {};
}

void generate_rows(const SynthTensor &t, uint64_t seed, size_t index, int64_t row0, int64_t n_rows,
                   uint8_t *out, std::vector<float> &scratch) {
  const uint64_t n = static_cast<uint64_t>(n_rows) * static_cast<uint64_t>(t.ne[0]);
  if (t.ggml_type != G::F32 && t.ggml_type != G::F16 && t.ggml_type != G::BF16)
    return fill_blocks(t, seed, index, row0, n_rows, out);
  // Float tensors are norms, biases and small matrices: the float fill's cost does not matter.
  scratch.resize(n);
  fill_rows(t, seed, index, row0, n_rows, scratch.data());
  if (t.ggml_type == G::F32) {
    std::memcpy(out, scratch.data(), n * sizeof(float));
  } else {
    for (uint64_t i = 0; i < n; ++i)
      store_u16(out + 2 * i, t.ggml_type == G::F16 ? wo::quant::float_to_half(scratch[i])
                                                   : wo::quant::float_to_bf16(scratch[i]));
  }
}

} // namespace wo::synth
