#include "generation/stop_matcher.hpp"

#include <algorithm>

namespace wo::generation {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto &s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

StopMatcher::Step StopMatcher::feed(const std::string &text) {
  Step step;
  pending_ += text;
  if (stops_.empty()) {
    step.emit.swap(pending_);
    return step;
  }
  // Earliest match of any stop sequence wins.
  size_t best = std::string::npos;
  for (const auto &s : stops_) best = std::min(best, pending_.find(s));
  if (best != std::string::npos) {
    step.emit = pending_.substr(0, best);
    step.stopped = true;
    pending_.clear();
    return step;
  }
  // Hold back the longest suffix that is a proper prefix of some stop sequence.
  size_t hold = 0;
  for (const auto &s : stops_) {
    size_t max_len = std::min(s.size() - 1, pending_.size());
    for (size_t len = max_len; len > hold; --len)
      if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
  }
  step.emit = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return step;
}

std::string StopMatcher::finish() {
  std::string out;
  out.swap(pending_);
  return out;
}

} // namespace wo::generation
