// Admission for the one job a worker runs at a time, its cancel flag, and the draining switch.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

namespace wo::http {

class JobSlot {
public:
  enum class Admit { ok, busy, draining };

  // Claims the slot for job_id; busy when a job holds it, draining once start_draining() ran.
  Admit try_begin(const std::string &job_id);
  // Releases the slot (the job's terminal event was written).
  void finish();

  // Sets the cancel flag when job_id is the running job. Returns whether it was (false: unknown or
  // already finished, which is a safe no-op).
  bool cancel(const std::string &job_id);
  // Cancels whatever runs (drain deadline). Returns whether a job was running.
  bool cancel_active();
  const std::atomic<bool> &cancel_flag() const { return cancel_; }

  void start_draining();
  bool draining() const { return draining_.load(); }
  bool busy() const;
  std::string active_job_id() const;

  // Waits until no job runs; false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout);

private:
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  bool active_ = false;
  std::string job_id_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> draining_{false};
};

} // namespace wo::http
