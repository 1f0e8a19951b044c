// ThreadPool: a fixed set of worker threads that run one parallel job at a
// time, with the calling thread taking part. Built for many short jobs per
// token (a dozen per layer): workers spin briefly before sleeping, so a job
// starts in microseconds. run() is not re-entrant and must be called from
// one thread at a time (the engine thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace tc::kernels {

class ThreadPool {
 public:
  // n_threads counts the caller: n_threads - 1 workers are started.
  // n_threads <= 0 means the number of physical cores.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Runs job(thread_idx, n_threads) on every thread (thread 0 is the caller)
  // and returns when all have finished. Exceptions thrown by the job on a
  // worker are rethrown here (the first one).
  void run(const std::function<void(int thread_idx, int n_threads)>& job);

  // Splits [0, n) into n_threads contiguous chunks (aligned to `grain`) and
  // runs body(begin, end) on each.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body);

  // Physical cores of this machine (logical CPUs without SMT siblings).
  static int physical_cores();

 private:
  void worker_loop(int thread_idx);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
  std::atomic<bool> has_error_{false};
};

}  // namespace tc::kernels
