#include "vocab.hpp"

#include <algorithm>
#include <cctype>

namespace wo::tok {

namespace {

// Tokens that end generation, by text: the list llama.cpp uses (its EOG detection), so that the
// worker stops where the reference implementation stops. Such tokens are forced to CONTROL.
const char *const kEogNames[] = {"<|eot_id|>",        "<|im_end|>",    "<|end|>",       "<|return|>",
                                 "<|call|>",          "<end_of_turn>", "<|endoftext|>", "</s>",
                                 "<|eom_id|>",        "<EOT>",         "_<EOT>",        "<|end_of_text|>",
                                 "<end_of_utterance>"};
// Candidates for the EOT id when the metadata names none, in order of preference.
const char *const kEotNames[] = {"<|eot_id|>",    "<|im_end|>",    "<|end|>",
                                 "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
                                 "<EOT>",         "_<EOT>",        "<end_of_utterance>"};
// Qwen's fill-in-the-middle markers also end generation.
const char *const kFimEogNames[] = {"<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"};

uint32_t attr_of_type(int32_t t) {
  switch (t) {
  case kTypeControl: return kAttrControl;
  case kTypeUserDefined: return kAttrUserDefined;
  case kTypeUnknown: return kAttrUnknown;
  default: return 0;
  }
}

} // namespace

void Vocab::finish(const std::string &model_name) {
  const int32_t n = size();
  attr.assign(n, 0);
  for (int32_t i = 0; i < n; ++i)
    attr[i] = attr_of_type(type[i]);

  if (eot < 0)
    for (const char *name : kEotNames) {
      int32_t id = find(name);
      if (id >= 0) {
        eot = id;
        break;
      }
    }
  if (eom < 0) eom = find("<|eom_id|>");

  eog.clear();
  auto mark_eog = [&](int32_t id) {
    if (id < 0 || id >= n) return;
    eog.insert(id);
    attr[id] |= kAttrControl;
  };
  for (const char *name : kEogNames)
    mark_eog(find(name));
  for (const char *name : kFimEogNames)
    mark_eog(find(name));
  if (eot >= 0 && eot < n) attr[eot] |= kAttrControl;

  // Harmony (gpt-oss): these structural tokens are always turned into their ids, even without
  // parse_special, as the reference implementation does.
  for (const char *name : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    int32_t id = find(name);
    if (id >= 0) attr[id] = kAttrUserDefined;
  }
  for (int32_t id : {eos, eot, eom})
    if (id >= 0 && id < n) eog.insert(id);
  // Harmony again: with <|return|> and <|call|> present, <|end|> closes a message, not the
  // generation (the reasoning channel ends with it), and it is always rendered.
  {
    int32_t ret = find("<|return|>"), call = find("<|call|>"), end = find("<|end|>");
    if (ret >= 0 && call >= 0 && end >= 0 && eog.count(ret) && eog.count(call) && eog.count(end)) {
      eog.erase(end);
      attr[end] = kAttrUserDefined;
    }
  }

  special_by_length.clear();
  for (int32_t i = 0; i < n; ++i)
    if (attr[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) special_by_length.push_back(i);
  std::stable_sort(special_by_length.begin(), special_by_length.end(),
                   [&](int32_t a, int32_t b) { return text[a].size() > text[b].size(); });

  // Phi-3 chat tokens swallow the whitespace that follows them (except the sentence markers).
  std::string lname = model_name;
  std::transform(lname.begin(), lname.end(), lname.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lname.find("phi-3") != std::string::npos || lname.find("phi3") != std::string::npos) {
    for (int32_t id : special_by_length)
      attr[id] |= kAttrRstrip;
    if (int32_t id = find("</s>"); id >= 0) attr[id] |= kAttrRstrip;
    for (const char *name : {"<unk>", "<s>", "<|endoftext|>"})
      if (int32_t id = find(name); id >= 0) attr[id] &= ~kAttrRstrip;
  }
}

} // namespace wo::tok
