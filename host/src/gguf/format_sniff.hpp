// Recognise model formats that are not GGUF, so a user who points the worker at a safetensors,
// PyTorch or ONNX file is told what it is instead of "bad magic".
#pragma once

#include <cstdint>
#include <string>

namespace wo::gguf {

// A sentence naming the format ("a safetensors file (8-byte header length 0x..., then JSON)"),
// or "" when the bytes match no known foreign format.
std::string describe_foreign_format(const uint8_t *data, uint64_t size);

} // namespace wo::gguf
