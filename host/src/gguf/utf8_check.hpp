// Strict UTF-8 validation for GGUF key and tensor names.
#pragma once

#include <string_view>

namespace wo::gguf {

// Index of the first byte that starts an invalid sequence (overlong forms, surrogates, code points
// above U+10FFFF and truncated sequences are invalid), or npos when s is valid UTF-8.
inline size_t utf8_invalid_at(std::string_view s) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF)
      len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0)
        lo = 0xA0; // no overlongs
      else if (c == 0xED)
        hi = 0x9F; // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0)
        lo = 0x90; // no overlongs
      else if (c == 0xF4)
        hi = 0x8F; // nothing above U+10FFFF
    } else
      return i;
    if (n - i < len || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

} // namespace wo::gguf
