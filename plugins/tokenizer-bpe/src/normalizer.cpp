#include "normalizer.hpp"

#include <worker/sdk.hpp>

#include <cstdlib>
#include <utf8proc.h>

namespace wo::tok {

namespace {

std::string normalize_run(std::string_view text, int options) {
  utf8proc_uint8_t *out = nullptr;
  utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &out, static_cast<utf8proc_option_t>(options));
  if (n < 0)
    throw Error(WO_ERR_INVALID_ARGUMENT, std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
  std::string s(reinterpret_cast<const char *>(out), static_cast<size_t>(n));
  std::free(out);
  return s;
}

} // namespace

std::string normalize(std::string_view text, NormForm form) {
  if (form == NormForm::None || text.empty()) return std::string(text);
  int options = UTF8PROC_STABLE;
  switch (form) {
  case NormForm::NFC: options |= UTF8PROC_COMPOSE; break;
  case NormForm::NFD: options |= UTF8PROC_DECOMPOSE; break;
  case NormForm::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
  case NormForm::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  case NormForm::None: break;
  }
  // ASCII characters are unchanged by every form, never reorder, and are never the second half
  // of a composition; so only runs of non-ASCII characters, together with the one ASCII character
  // before them (a possible base, as in "e" + U+0301), need utf8proc. Mostly-ASCII text stays fast.
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      out.push_back(text[i++]);
      continue;
    }
    size_t start = i;
    if (start > 0 && static_cast<unsigned char>(text[start - 1]) < 0x80) {
      --start;
      out.pop_back();
    }
    size_t end = i;
    while (end < n && static_cast<unsigned char>(text[end]) >= 0x80)
      ++end;
    out += normalize_run(text.substr(start, end - start), options);
    i = end;
  }
  return out;
}

} // namespace wo::tok
