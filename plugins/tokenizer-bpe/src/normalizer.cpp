#include "normalizer.hpp"

#include <worker/sdk.hpp>

#include <cstdlib>
#include <utf8proc.h>

namespace wo::tok {

std::string normalize(std::string_view text, NormForm form) {
  if (form == NormForm::None || text.empty()) return std::string(text);
  // ASCII is invariant under every normalization form: skip utf8proc's decompose/recompose.
  bool ascii = true;
  for (unsigned char c : text)
    if (c >= 0x80) {
      ascii = false;
      break;
    }
  if (ascii) return std::string(text);
  int options = UTF8PROC_STABLE;
  switch (form) {
  case NormForm::NFC: options |= UTF8PROC_COMPOSE; break;
  case NormForm::NFD: options |= UTF8PROC_DECOMPOSE; break;
  case NormForm::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
  case NormForm::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  case NormForm::None: break;
  }
  utf8proc_uint8_t *out = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
                                    static_cast<utf8proc_ssize_t>(text.size()), &out,
                                    static_cast<utf8proc_option_t>(options));
  if (n < 0)
    throw Error(WO_ERR_INVALID_ARGUMENT, std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
  std::string s(reinterpret_cast<const char *>(out), static_cast<size_t>(n));
  std::free(out);
  return s;
}

} // namespace wo::tok
