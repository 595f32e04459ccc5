// A fixed-size thread pool for data-parallel loops (batch mask fills, eager mask building).
//
// ParallelFor(n, fn) runs fn(i) for i in [0, n) on the pool's workers plus the calling thread and
// returns when all are done; the first exception thrown by any fn is rethrown in the caller.
// Workers are created once (lazily, by Global()) and live for the process. Calls from several
// threads at once are safe: each call is its own job with its own counters.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace xg {

class ThreadPool {
 public:
  explicit ThreadPool(int num_workers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs fn(0..n-1) with at most max_parallel threads (the caller included).
  void ParallelFor(size_t n, int max_parallel, const std::function<void(size_t)>& fn);
  int NumWorkers() const { return static_cast<int>(workers_.size()); }

  // The process-wide pool, sized to the hardware (at least 1 worker).
  static ThreadPool& Global();

 private:
  struct Job;
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Job>> queue_;  // jobs with work left to claim
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace xg
