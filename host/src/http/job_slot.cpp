#include "http/job_slot.hpp"

namespace wo::http {

JobSlot::Admit JobSlot::try_begin(const std::string &job_id) {
  std::lock_guard<std::mutex> lk(mu_);
  if (draining_) return Admit::draining;
  if (active_) return Admit::busy;
  active_ = true;
  job_id_ = job_id;
  cancel_ = false;
  return Admit::ok;
}

void JobSlot::finish() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    active_ = false;
    job_id_.clear();
  }
  idle_cv_.notify_all();
}

bool JobSlot::cancel(const std::string &job_id) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!active_ || job_id_ != job_id) return false;
  cancel_ = true;
  return true;
}

bool JobSlot::cancel_active() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!active_) return false;
  cancel_ = true;
  return true;
}

void JobSlot::start_draining() {
  std::lock_guard<std::mutex> lk(mu_);
  draining_ = true;
}

bool JobSlot::busy() const {
  std::lock_guard<std::mutex> lk(mu_);
  return active_;
}

std::string JobSlot::active_job_id() const {
  std::lock_guard<std::mutex> lk(mu_);
  return job_id_;
}

bool JobSlot::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  return idle_cv_.wait_for(lk, timeout, [&] { return !active_; });
}

} // namespace wo::http
