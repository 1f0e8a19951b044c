// ThreadPool: every slot of every job runs exactly once whichever thread
// takes it (thousands of short jobs, so workers waking late claim slots of
// later jobs and the caller takes slots of workers not yet started), and
// exceptions from any slot reach the caller. What the slots buy under CPU
// contention is measured, not tested: docs/engine.md, "Threads".
#include "kernels/cpu/thread_pool.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <vector>

using tc::kernels::ThreadPool;

TEST_CASE("thread pool: each slot runs once per job, on any thread count", "[kernels][pool]") {
  for (int n : {1, 2, 3, 5}) {
    INFO(n << " threads");
    ThreadPool pool(n);
    REQUIRE(pool.n_threads() == n);
    std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
    constexpr int kJobs = 3000;
    for (int j = 0; j < kJobs; ++j) {
      pool.run([&](int slot, int n_slots) {
        REQUIRE(n_slots == n);
        runs[static_cast<size_t>(slot)].fetch_add(1);
      });
    }
    for (int s = 0; s < n; ++s) CHECK(runs[static_cast<size_t>(s)].load() == kJobs);
    // parallel_for covers [0, n) exactly once too.
    std::vector<std::atomic<int>> covered(1000);
    pool.parallel_for(1000, 7, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) covered[static_cast<size_t>(i)].fetch_add(1);
    });
    for (const auto& c : covered) CHECK(c.load() == 1);
  }
}

TEST_CASE("thread pool: an exception in any slot reaches the caller, and the pool goes on", "[kernels][pool]") {
  ThreadPool pool(3);
  for (int bad = 0; bad < 3; ++bad) {
    INFO("slot " << bad << " throws");
    CHECK_THROWS_WITH(pool.run([bad](int slot, int) {
      if (slot == bad) throw std::runtime_error("slot failed");
    }),
                      "slot failed");
    std::atomic<int> ran{0};
    pool.run([&](int, int) { ran.fetch_add(1); });
    CHECK(ran.load() == 3);
  }
}
