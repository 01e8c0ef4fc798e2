// Streaming UTF-8 assembly for token-by-token output.
//
// A token's bytes may end in the middle of a multibyte character (byte-level BPE splits rare
// characters across tokens; SentencePiece emits <0xXX> byte tokens). Sending such bytes to a client
// as they come would produce broken text, and replacing them at once would corrupt characters that
// the next token completes. Utf8Assembler holds back only an incomplete-but-so-far-valid tail and
// emits everything else as valid UTF-8:
//   - it never emits a partial multibyte sequence and never drops bytes;
//   - a sequence that can no longer become valid (bad lead byte, bad continuation, overlong form,
//     surrogate, beyond U+10FFFF) becomes one U+FFFD per maximal invalid subpart (the Unicode /
//     WHATWG convention), so the output does not depend on how the input was chunked;
//   - flush() turns a held-back incomplete tail into one U+FFFD (end of stream).
// Hence concat(push(c1), push(c2), ..., flush()) == push(c1 + c2 + ...) + flush() for every split.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wo {

class Utf8Assembler {
public:
  // Append bytes; returns the text that is now complete (possibly empty).
  std::string push(std::string_view bytes) {
    std::string out;
    out.reserve(pending_.size() + bytes.size());
    std::string data;
    std::string_view in = bytes;
    if (!pending_.empty()) {
      data = pending_;
      data.append(bytes.data(), bytes.size());
      in = data;
      pending_.clear();
    }
    size_t i = 0;
    const size_t n = in.size();
    while (i < n) {
      const auto b = static_cast<unsigned char>(in[i]);
      if (b < 0x80) {
        out.push_back(static_cast<char>(b));
        ++i;
        continue;
      }
      size_t len = 0;
      unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
      if (b >= 0xC2 && b <= 0xDF) {
        len = 2;
      } else if (b >= 0xE0 && b <= 0xEF) {
        len = 3;
        if (b == 0xE0)
          lo = 0xA0; // no overlong 3-byte forms
        else if (b == 0xED)
          hi = 0x9F; // no UTF-16 surrogates
      } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4;
        if (b == 0xF0)
          lo = 0x90; // no overlong 4-byte forms
        else if (b == 0xF4)
          hi = 0x8F; // nothing beyond U+10FFFF
      } else {
        out += kReplacement; // 0x80..0xC1, 0xF5..0xFF can never start a character
        ++i;
        continue;
      }
      size_t k = 1;
      bool bad = false;
      for (; k < len; ++k) {
        if (i + k >= n) break; // incomplete so far: wait for more bytes
        const auto c = static_cast<unsigned char>(in[i + k]);
        const unsigned char l = (k == 1) ? lo : 0x80, h = (k == 1) ? hi : 0xBF;
        if (c < l || c > h) {
          bad = true;
          break;
        }
      }
      if (bad) {
        out += kReplacement; // the maximal subpart in[i, i+k) is certainly invalid
        i += k;              // the offending byte starts over
      } else if (k < len) {
        pending_.assign(in.data() + i, n - i);
        break;
      } else {
        out.append(in.data() + i, len);
        i += len;
      }
    }
    return out;
  }

  // End of stream: an incomplete tail becomes U+FFFD.
  std::string flush() {
    if (pending_.empty()) return {};
    pending_.clear();
    return std::string(kReplacement);
  }

  // Bytes held back waiting for the rest of a character (0..3).
  size_t pending_bytes() const { return pending_.size(); }

private:
  static constexpr std::string_view kReplacement{"\xEF\xBF\xBD"};
  std::string pending_;
};

} // namespace wo
