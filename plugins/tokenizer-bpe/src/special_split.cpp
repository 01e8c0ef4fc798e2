#include "special_split.hpp"

namespace wo::tok {

namespace {
bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
} // namespace

std::vector<Fragment> split_special(std::string_view text, const Vocab &vocab, bool parse_special) {
  std::vector<Fragment> frags;
  if (!text.empty()) frags.push_back({-1, text});
  std::vector<Fragment> next;
  for (int32_t id : vocab.special_by_length) {
    const uint32_t attr = vocab.attr[id];
    if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
    const std::string &needle = vocab.text[id];
    if (needle.empty()) continue;
    bool any = false;
    for (const Fragment &f : frags)
      if (f.token < 0 && f.text.find(needle) != std::string_view::npos) any = true;
    if (!any) continue;
    next.clear();
    for (const Fragment &f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (;;) {
        size_t at = rest.find(needle);
        if (at == std::string_view::npos) break;
        std::string_view left = rest.substr(0, at);
        if (attr & kAttrLstrip)
          while (!left.empty() && is_ascii_space(left.back()))
            left.remove_suffix(1);
        if (!left.empty()) next.push_back({-1, left});
        next.push_back({id, {}});
        rest = rest.substr(at + needle.size());
        if (attr & kAttrRstrip)
          while (!rest.empty() && is_ascii_space(rest.front()))
            rest.remove_prefix(1);
      }
      if (!rest.empty()) next.push_back({-1, rest});
    }
    frags.swap(next);
  }
  return frags;
}

} // namespace wo::tok
