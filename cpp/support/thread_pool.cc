#include "support/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>

namespace xg {

struct ThreadPool::Job {
  size_t n = 0;
  const std::function<void(size_t)>* fn = nullptr;
  std::atomic<size_t> next{0};
  std::atomic<int> helpers_left{0};  // worker slots still open for this job
  std::mutex mu;
  std::condition_variable done_cv;
  int running = 0;  // workers inside Run()
  std::exception_ptr error;

  // Claims and runs indices until none are left.
  void Run() {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        (*fn)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    }
  }
};

ThreadPool::ThreadPool(int num_workers) {
  for (int i = 0; i < std::max(1, num_workers); ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

ThreadPool& ThreadPool::Global() {
  static ThreadPool* pool = new ThreadPool(std::max(1u, std::thread::hardware_concurrency()));  // never destroyed
  return *pool;
}

void ThreadPool::WorkerLoop() {
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = queue_.back();
      if (--job->helpers_left <= 0) queue_.pop_back();
      std::lock_guard<std::mutex> jl(job->mu);
      ++job->running;
    }
    job->Run();
    std::lock_guard<std::mutex> jl(job->mu);
    if (--job->running == 0) job->done_cv.notify_all();
  }
}

void ThreadPool::ParallelFor(size_t n, int max_parallel, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (n == 1 || max_parallel <= 1 || NumWorkers() == 0) {
    for (size_t i = 0; i < n; ++i) fn(i);  // nothing to share: no job, no locks
    return;
  }
  auto job = std::make_shared<Job>();
  job->n = n;
  job->fn = &fn;
  int helpers = std::min<int>(std::min<size_t>(n, static_cast<size_t>(std::max(1, max_parallel))) - 1, NumWorkers());
  if (helpers > 0) {
    job->helpers_left = helpers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(job);
    }
    for (int i = 0; i < helpers; ++i) cv_.notify_one();
  }
  job->Run();
  {
    // No new worker may join once the caller has finished claiming: remove the job from the queue.
    std::lock_guard<std::mutex> lock(mu_);
    queue_.erase(std::remove(queue_.begin(), queue_.end(), job), queue_.end());
  }
  std::unique_lock<std::mutex> jl(job->mu);
  job->done_cv.wait(jl, [&] { return job->running == 0; });
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace xg
