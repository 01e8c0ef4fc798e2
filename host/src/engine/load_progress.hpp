// model_load_progress narration events at 0, 25, 50, 75 and 100 percent of the bytes uploaded.
// Each threshold is emitted exactly once, in order, however the chunks fall.
#pragma once

#include <cstdint>
#include <string>

namespace wo::engine {

class LoadProgress {
public:
  LoadProgress(std::string model_ref, uint64_t total_bytes);
  void start();                 // 0 %
  void advance(uint64_t bytes); // bytes uploaded so far, in total; emits crossed thresholds < 100
  void finish();                // 100 % (after the last copy completed)

private:
  void emit(int percent, uint64_t done);
  std::string model_ref_;
  uint64_t total_;
  int next_ = 0; // next threshold to emit (0, 25, 50, 75, 100; 125 = all done)
};

} // namespace wo::engine
