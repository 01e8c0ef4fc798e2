#define PCRE2_CODE_UNIT_WIDTH 8
#include "regex_splitter.hpp"

#include <worker/sdk.hpp>

#include <pcre2.h>

namespace wo::tok {

struct RegexSplitter::Impl {
  pcre2_code *code = nullptr;
  bool jit = false;
  ~Impl() {
    if (code) pcre2_code_free(code);
  }
};

namespace {

// One match-data block per thread and pattern size class: allocation per call would dominate the
// cost of short texts.
struct MatchData {
  pcre2_match_data *md = nullptr;
  MatchData() { md = pcre2_match_data_create(4, nullptr); }
  ~MatchData() { pcre2_match_data_free(md); }
};

} // namespace

RegexSplitter::RegexSplitter(const std::string &pattern, const std::string &origin)
    : pattern_(pattern), impl_(std::make_unique<Impl>()) {
  int err = 0;
  PCRE2_SIZE err_off = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_off, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    throw Error(WO_ERR_FORMAT, "pre-tokenizer regex from " + origin + " does not compile at offset " +
                                   std::to_string(err_off) + ": " + reinterpret_cast<const char *>(buf) +
                                   " (pattern: " + pattern + ")");
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

RegexSplitter::~RegexSplitter() = default;

void RegexSplitter::split(std::string_view text, std::vector<std::string_view> &out) const {
  thread_local MatchData tl;
  pcre2_match_data *md = tl.md;
  const auto *subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t n = text.size();
  size_t pos = 0, emitted = 0;
  while (pos < n) {
    int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, n, pos, 0, md, nullptr)
                        : pcre2_match(impl_->code, subject, n, pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(rc, buf, sizeof buf);
      throw Error(WO_ERR_INTERNAL, std::string("pre-tokenizer regex failed at byte offset ") +
                                       std::to_string(pos) + ": " + reinterpret_cast<const char *>(buf));
    }
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t s = ov[0], e = ov[1];
    if (s > emitted) out.emplace_back(text.data() + emitted, s - emitted); // unmatched gap
    if (e > s) {
      out.emplace_back(text.data() + s, e - s);
      emitted = e;
      pos = e;
    } else {
      // Empty match: step over one character so the scan always advances.
      pos = s + 1;
      while (pos < n && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80)
        ++pos;
    }
  }
  if (emitted < n) out.emplace_back(text.data() + emitted, n - emitted);
}

} // namespace wo::tok
