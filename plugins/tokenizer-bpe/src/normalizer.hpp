// Unicode normalization forms for tokenizer.json normalizers (utf8proc).
#pragma once

#include <string>
#include <string_view>

namespace wo::tok {

enum class NormForm { None, NFC, NFD, NFKC, NFKD };

// `text` must be valid UTF-8. Throws wo::Error on utf8proc failure.
std::string normalize(std::string_view text, NormForm form);

} // namespace wo::tok
