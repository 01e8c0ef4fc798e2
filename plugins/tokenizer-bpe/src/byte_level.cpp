#include "byte_level.hpp"

#include <array>
#include <cstdint>

namespace wo::tok {

namespace {

struct Tables {
  std::array<std::string, 256> to_text;
  std::array<int16_t, 0x144> to_byte; // code point -> byte, -1 when not in the mapping

  Tables() {
    to_byte.fill(-1);
    auto printable = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      uint32_t cp = printable(b) ? static_cast<uint32_t>(b) : 0x100u + static_cast<uint32_t>(next++);
      std::string s;
      if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
      } else {
        s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      }
      to_text[b] = s;
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Tables &tables() {
  static const Tables t;
  return t;
}

} // namespace

const std::string &byte_to_unicode(unsigned char b) { return tables().to_text[b]; }

bool unicode_to_bytes(std::string_view text, std::string &out) {
  const Tables &t = tables();
  out.clear();
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto c0 = static_cast<unsigned char>(text[i]);
    uint32_t cp;
    if (c0 < 0x80) {
      cp = c0;
      i += 1;
    } else if ((c0 & 0xE0) == 0xC0 && i + 1 < text.size()) {
      cp = ((c0 & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
      i += 2;
    } else {
      return false; // 3- and 4-byte code points are all beyond U+0143
    }
    if (cp >= t.to_byte.size() || t.to_byte[cp] < 0) return false;
    out.push_back(static_cast<char>(t.to_byte[cp]));
  }
  return true;
}

std::string bytes_to_unicode(std::string_view bytes) {
  std::string s;
  s.reserve(bytes.size() * 2);
  for (unsigned char b : bytes)
    s += byte_to_unicode(b);
  return s;
}

} // namespace wo::tok
