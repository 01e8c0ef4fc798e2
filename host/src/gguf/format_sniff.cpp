#include "gguf/format_sniff.hpp"

#include <cstring>

namespace wo::gguf {
namespace {

uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

// ONNX is a protobuf ModelProto. Its writers emit field 1 (ir_version, varint) first, then a
// length-delimited or varint field among 2..8 (producer, domain, graph, opset...). Best effort:
// protobuf has no magic, so this only catches the common layout.
bool looks_like_onnx(const uint8_t *d, uint64_t n) {
  if (n < 4 || d[0] != 0x08 || d[1] == 0 || d[1] > 20) return false;
  const uint8_t next = d[2];
  const uint8_t field = next >> 3, wire = next & 7;
  return field >= 2 && field <= 8 && (wire == 0 || wire == 2);
}

} // namespace

std::string describe_foreign_format(const uint8_t *d, uint64_t n) {
  if (n >= 9) {
    uint64_t hlen = le64(d);
    if (d[8] == '{' && hlen >= 2 && hlen <= n - 8)
      return "a safetensors file (8-byte header length " + std::to_string(hlen) +
             " then a JSON header); convert it to GGUF (e.g. with llama.cpp's convert_hf_to_gguf.py)";
  }
  if (n >= 4 && std::memcmp(d, "PK\x03\x04", 4) == 0)
    return "a ZIP archive, as PyTorch checkpoints (.pt/.pth/.bin) are; convert the model to GGUF";
  if (n >= 2 && d[0] == 0x80 && d[1] >= 2 && d[1] <= 5)
    return "a Python pickle (protocol " + std::to_string(d[1]) +
           "), as legacy PyTorch checkpoints are; convert the model to GGUF";
  if (n >= 4 &&
      (std::memcmp(d, "lmgg", 4) == 0 || std::memcmp(d, "fmgg", 4) == 0 || std::memcmp(d, "tjgg", 4) == 0))
    return "a pre-GGUF GGML/GGMF/GGJT file (the old llama.cpp formats); convert it to GGUF";
  if (looks_like_onnx(d, n)) return "probably an ONNX model (protobuf ModelProto); convert the model to GGUF";
  return {};
}

} // namespace wo::gguf
