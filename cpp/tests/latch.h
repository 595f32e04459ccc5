// A single-use latch whose wait is bounded (5 s), so a concurrency regression fails instead of hanging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace xg {

class Latch {
 public:
  explicit Latch(int n) : n_(n) {}
  // Counts down and waits (at most 5 s) for the others; returns false on timeout.
  bool ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--n_ == 0) cv_.notify_all();
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return n_ <= 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
};

}  // namespace xg
