// Pre-tokenization by regular expression (PCRE2, UTF + Unicode properties, JIT-compiled): the text
// is cut into the pieces the pattern matches plus the gaps between matches ("isolated" split), so
// no byte is ever lost.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wo::tok {

class RegexSplitter {
public:
  // Throws wo::Error(WO_ERR_FORMAT) naming the pattern, offset and PCRE2's reason when it does not
  // compile. `origin` says where the pattern came from (for messages).
  RegexSplitter(const std::string &pattern, const std::string &origin);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter &) = delete;
  RegexSplitter &operator=(const RegexSplitter &) = delete;

  // Append the pieces of `text` (valid UTF-8, already checked) to `out`. Thread-safe.
  void split(std::string_view text, std::vector<std::string_view> &out) const;

  const std::string &pattern() const { return pattern_; }

private:
  struct Impl;
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
};

} // namespace wo::tok
