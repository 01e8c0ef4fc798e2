#include "engine/load_progress.hpp"

#include "observe/log.hpp"

namespace wo::engine {

LoadProgress::LoadProgress(std::string model_ref, uint64_t total_bytes)
    : model_ref_(std::move(model_ref)), total_(total_bytes) {}

void LoadProgress::emit(int percent, uint64_t done) {
  wo::observe::info("model_load_progress", {{"percent", int64_t{percent}},
                                            {"bytes_done", done},
                                            {"bytes_total", total_},
                                            {"model_ref", model_ref_}});
}

void LoadProgress::start() {
  if (next_ == 0) {
    emit(0, 0);
    next_ = 25;
  }
}

void LoadProgress::advance(uint64_t bytes) {
  // Thresholds below 100 only: 100 % means the copies finished, which finish() knows.
  while (next_ > 0 && next_ < 100 && (total_ == 0 || bytes * 100 >= total_ * static_cast<uint64_t>(next_))) {
    emit(next_, bytes);
    next_ += 25;
  }
}

void LoadProgress::finish() {
  start();
  advance(total_);
  if (next_ == 100) {
    emit(100, total_);
    next_ = 125;
  }
}

} // namespace wo::engine
