// UTF-8 checks for text entering the tokenizer.
#pragma once

#include <cstddef>
#include <string_view>

namespace wo::tok {

// Throws wo::Error(WO_ERR_INVALID_ARGUMENT) naming the byte offset and what was expected when
// `text` is not well-formed UTF-8 (overlong forms, UTF-16 surrogates and code points beyond
// U+10FFFF are rejected). `what` names the input in the message.
void require_utf8(std::string_view text, const char *what);

// Length of the UTF-8 sequence a lead byte announces (1 for stray continuation bytes).
inline size_t utf8_len(unsigned char lead) {
  static const unsigned char lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lookup[lead >> 4];
}

} // namespace wo::tok
