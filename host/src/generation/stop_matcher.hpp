// Stop sequences matched on decoded text, across token boundaries.
//
// Text is fed as it is decoded. Everything that can no longer be the start of a stop sequence is
// released at once; a tail that could still grow into one is held back. When a stop sequence
// appears, the text before it is released and the stop string itself never is.
#pragma once

#include <string>
#include <vector>

namespace wo::generation {

class StopMatcher {
public:
  explicit StopMatcher(std::vector<std::string> stops);

  struct Step {
    std::string emit;     // text safe to stream now
    bool stopped = false; // a stop sequence matched: end the job after emitting `emit`
  };

  // Add decoded text (complete UTF-8 characters).
  Step feed(const std::string &text);
  // End of generation without a match: the held-back tail is ordinary text.
  std::string finish();

private:
  std::vector<std::string> stops_;
  std::string pending_;
};

} // namespace wo::generation
