// ThreadPool: a fixed set of worker threads that run one parallel job at a
// time, with the calling thread taking part. Built for many short jobs per
// token (a dozen per layer): workers spin briefly before sleeping, so a job
// starts in microseconds. run() is not re-entrant and must be called from
// one thread at a time (the engine thread).
//
// A job is n_threads slots. The caller runs slot 0; workers claim the others
// as they wake, and once its own slot is done the caller claims whatever no
// worker has started. So a worker whose core another process holds (a
// desktop, a compile beside the server) delays a job by at most the slot it
// is in, not until the OS schedules it again. Jobs must therefore not
// synchronize between slots (no barriers inside a job): a slot's work
// depends on its index only, never on which thread runs it.
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

  // Runs job(slot, n_threads) for every slot in [0, n_threads) (slot 0 on the
  // caller) and returns when all have finished. Exceptions thrown by the job
  // are rethrown here (the caller's own, else the first other one).
  void run(const std::function<void(int slot, int n_threads)>& job);

  // Splits [0, n) into n_threads contiguous chunks (aligned to `grain`) and
  // runs body(begin, end) on each.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body);

  // Physical cores of this machine (logical CPUs without SMT siblings).
  static int physical_cores();

 private:
  void worker_loop();
  // Claims and runs slots of the current job until none is left.
  void run_claimed_slots();

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> next_slot_{0};  // the next slot to claim; >= n_threads_: none left
  std::atomic<int> pending_{0};    // claimable slots not yet finished
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
  std::atomic<bool> has_error_{false};
};

}  // namespace tc::kernels
