// ThreadPool: generation counter + spin-then-wait workers claiming slots.
#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace tc::kernels {
namespace {

// Spins this many times on the generation counter before sleeping on it.
constexpr int kSpinIterations = 1 << 14;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

int ThreadPool::physical_cores() {
  // Count distinct (physical id, core id) pairs; fall back to logical CPUs.
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<int, int>> cores;
  std::string line;
  int physical = 0;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const int value = std::atoi(line.c_str() + colon + 1);
    if (key == "physical id") physical = value;
    if (key == "core id") cores.insert({physical, value});
  }
  const int logical = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (cores.empty()) return logical;
  return std::min(logical, static_cast<int>(cores.size()));
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads > 0 ? n_threads : physical_cores()) {
  next_slot_.store(n_threads_);
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_claimed_slots() {
  // The claim comes first: a worker that wakes late may take a slot of a
  // later job, and then reads that job (run() publishes job_ before slots).
  for (int slot = next_slot_.fetch_add(1, std::memory_order_acq_rel); slot < n_threads_;
       slot = next_slot_.fetch_add(1, std::memory_order_acq_rel)) {
    try {
      (*job_)(slot, n_threads_);
    } catch (...) {
      if (!has_error_.exchange(true)) error_ = std::current_exception();
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
      cpu_relax();
      gen = generation_.load(std::memory_order_acquire);
    }
    while (gen == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load()) return;
    run_claimed_slots();
  }
}

void ThreadPool::run(const std::function<void(int, int)>& job) {
  if (n_threads_ == 1) {
    job(0, 1);
    return;
  }
  job_ = &job;
  has_error_.store(false);
  error_ = nullptr;
  pending_.store(n_threads_ - 1, std::memory_order_release);
  next_slot_.store(1, std::memory_order_release);  // publishes the job: slots are claimable from here
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  std::exception_ptr caller_error;
  try {
    job(0, n_threads_);
  } catch (...) {
    caller_error = std::current_exception();
  }
  run_claimed_slots();  // the slots of workers that have not started
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0 && spin < kSpinIterations; ++spin) cpu_relax();
  for (int left = pending_.load(std::memory_order_acquire); left != 0; left = pending_.load(std::memory_order_acquire)) {
    pending_.wait(left, std::memory_order_acquire);
  }
  job_ = nullptr;
  if (caller_error) std::rethrow_exception(caller_error);
  if (has_error_.load()) std::rethrow_exception(error_);
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t n_chunks = (n + grain - 1) / grain;
  run([&](int t, int nt) {
    const int64_t c0 = n_chunks * t / nt;
    const int64_t c1 = n_chunks * (t + 1) / nt;
    const int64_t begin = std::min(n, c0 * grain);
    const int64_t end = std::min(n, c1 * grain);
    if (begin < end) body(begin, end);
  });
}

}  // namespace tc::kernels
