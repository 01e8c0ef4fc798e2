// Cutting text at special-token text before the model sees it. Tokens are tried longest first;
// each occurrence becomes one id. CONTROL and UNKNOWN tokens are matched only when the caller asks
// to parse special tokens; USER_DEFINED ones always (they are ordinary added words). Tokens with
// the rstrip/lstrip attribute also consume the ASCII whitespace beside them.
#pragma once

#include "vocab.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace wo::tok {

struct Fragment {
  int32_t token = -1;    // >= 0: a special token
  std::string_view text; // token < 0: text still to tokenize
};

std::vector<Fragment> split_special(std::string_view text, const Vocab &vocab, bool parse_special);

} // namespace wo::tok
