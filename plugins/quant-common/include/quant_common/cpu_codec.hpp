// CPU reference codecs for every type the quant plugins serve: exact dequantization (bit for bit
// what the GGUF/ggml definitions give) and a simple quantizer for tools (gguf-synth) and tests.
//
// Functions throw wo::Error with a message that names the type, the row length and what was
// expected; the plugins turn that into a wo_status at the ABI boundary.
#pragma once

#include <cstdint>
#include <string>

namespace wo::quant {

// True when the CPU codec knows this ggml type id.
bool cpu_supports(uint32_t type);

// Name for messages ("Q4_K", or "type 77" for unknown ids).
std::string type_label(uint32_t type);

// Throws when row_len is not a positive whole number of the type's blocks. `where` names the
// tensor or caller for the message.
void check_row_len(uint32_t type, int64_t row_len, const std::string &where);

// n_rows rows of row_len elements, stored one after another (row bytes = ggml row size).
void dequantize_rows(uint32_t type, const void *src, int64_t n_rows, int64_t row_len, float *dst);
void quantize_rows(uint32_t type, const float *src, int64_t n_rows, int64_t row_len, void *dst);

} // namespace wo::quant
