#include "utf8_text.hpp"

#include <worker/sdk.hpp>

#include <cstdio>
#include <string>

namespace wo::tok {

namespace {

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", b);
  return buf;
}

[[noreturn]] void fail(const char *what, size_t off, const std::string &expected, unsigned char found) {
  throw Error(WO_ERR_INVALID_ARGUMENT, std::string(what) + " is not valid UTF-8: at byte offset " +
                                           std::to_string(off) + " expected " + expected + ", found " +
                                           hex_byte(found));
}

} // namespace

void require_utf8(std::string_view text, const char *what) {
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F; // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      fail(what, i, "a UTF-8 lead byte (0x00-0x7F, 0xC2-0xF4)", b);
    }
    if (i + len > n)
      throw Error(WO_ERR_INVALID_ARGUMENT, std::string(what) + " is not valid UTF-8: the " +
                                               std::to_string(len) + "-byte sequence at byte offset " +
                                               std::to_string(i) + " is cut off by the end of the text");
    for (size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
      if (c < l || c > h)
        fail(what, i + k,
             "a continuation byte in " + hex_byte(l) + "-" + hex_byte(h) + " (sequence starting " +
                 hex_byte(b) + (b == 0xED ? ", surrogates are not allowed" : "") + ")",
             c);
    }
    i += len;
  }
}

} // namespace wo::tok
