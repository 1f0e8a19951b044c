// ModelRegistry within its memory budgets, on fake memory probes: host
// bytes predicted from the file (and the last load's measurement), least
// recently used idle models unloaded until a load fits, a model larger than
// a whole budget refused without unloading anything, busy models giving way
// one after another under the budget with no request lost, and on a fake GPU
// placement "auto" solving within what the other models leave (after room
// for what is not FFN) while a dense model's first load counts its whole file.
#include "server/model_registry.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <random>
#include <thread>

#include "profiler/make_model.h"
#include "tests/profiler/sparse_test_options.h"
#include "tests/server/fake_model_folder.h"

using namespace tc::test;

namespace {

using Lease = std::shared_ptr<tc::server::ModelLease>;

// Writes `bytes` bytes to dir/NAME.gguf (not a model: the registry predicts
// its host bytes from the file's size).
void sized_file(const fs::path& dir, const std::string& name, size_t bytes) {
  std::ofstream(dir / (name + ".gguf"), std::ios::trunc) << std::string(bytes, 'x');
}

uint64_t loaded_host_bytes(Folder& f) {
  uint64_t sum = 0;
  for (const auto& m : f.registry->list()) {
    if (m.state == ModelState::Loaded) sum += m.host_bytes;
  }
  return sum;
}

uint64_t loaded_gpu_bytes(Folder& f) {
  uint64_t sum = 0;
  for (const auto& m : f.registry->list()) {
    if (m.state == ModelState::Loaded) sum += m.gpu_bytes;
  }
  return sum;
}

}  // namespace

TEST_CASE("RAM budget: least recently used idle models unload until a load fits, by the bytes last measured",
          "[server][registry]") {
  FakeMemory memory;
  Folder f("registry_ram_budget", {"a", "b", "c", "d"}, 8, "-1", [&](tc::server::RegistryOptions& o, const fs::path& dir) {
    o.serve.models_ram_budget = "1000";
    o.probes = memory.probes();
    for (const char* m : {"a", "b", "c"}) sized_file(dir, m, 400);
    sized_file(dir, "d", 100);
  });
  f.loader.memory = &memory;
  CHECK(f.registry->ram_budget() == 1000);
  f.lease("a");
  f.lease("b");
  f.lease("c");  // 1200 > 1000: a, the least recently used, unloads first
  CHECK(f.state("a") == ModelState::Unloaded);
  CHECK(f.state("b") == ModelState::Loaded);
  CHECK(f.state("c") == ModelState::Loaded);
  CHECK(loaded_host_bytes(f) == 800);
  CHECK(has(f.metrics(), "thermocline_model_unloads_total{model=\"a\",reason=\"evicted\"} 1"));

  // d's file is 100 bytes, but its load takes 700 (measured): it fits by
  // its prediction, and the next load of it counts what was measured.
  f.loader.host_take["d"] = 700;
  f.lease("d");
  CHECK(f.state("b") == ModelState::Loaded);
  CHECK(f.state("c") == ModelState::Loaded);
  CHECK(f.registry->info("d")->host_bytes == 700);
  REQUIRE(f.registry->request_unload("d"));
  REQUIRE(f.eventually([&] { return f.state("d") == ModelState::Unloaded; }));
  f.lease("b");  // c is now the least recently used
  f.lease("d");  // 700 + 800 > 1000: c unloads; 700 + 400 > 1000: b too
  CHECK(f.state("c") == ModelState::Unloaded);
  CHECK(f.state("b") == ModelState::Unloaded);
  CHECK(loaded_host_bytes(f) == 700);
}

TEST_CASE("RAM budget: a model larger than the whole budget is refused with the reason, nothing unloads for it",
          "[server][registry]") {
  FakeMemory memory;
  Folder f("registry_ram_too_big", {"small", "huge"}, 8, "-1", [&](tc::server::RegistryOptions& o, const fs::path& dir) {
    o.serve.models_ram_budget = "1000";
    o.probes = memory.probes();
    sized_file(dir, "small", 300);
    sized_file(dir, "huge", 1500);
  });
  f.loader.memory = &memory;
  f.lease("small");
  std::optional<tc::server::ApiError> error;
  auto lease = f.registry->acquire("huge", std::nullopt, error, {}, 100ms);
  CHECK_FALSE(lease);
  REQUIRE(error);
  CHECK(error->status == 500);
  CHECK(error->code == "model_load_failed");
  CHECK_THAT(error->message, Catch::Contains("huge") && Catch::Contains("more than models_ram_budget"));
  CHECK(f.loader.count("huge") == 0);
  CHECK(f.state("small") == ModelState::Loaded);  // not unloaded in vain
  CHECK(f.loader.count("small") == 1);
}

TEST_CASE("RAM budget: with every loaded model busy, models give way one after another and no request is lost",
          "[server][registry]") {
  // Four models of 400 bytes under a 1000-byte budget: two fit at once
  // (max_loaded_models is no limit here). Eight clients keep requesting
  // models at random, each holding its lease a little while.
  FakeMemory memory;
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  Folder f("registry_ram_give_way", names, 8, "-1", [&](tc::server::RegistryOptions& o, const fs::path& dir) {
    o.serve.models_ram_budget = "1000";
    o.probes = memory.probes();
    for (const auto& m : names) sized_file(dir, m, 400);
  });
  f.loader.memory = &memory;
  constexpr int kClients = 8, kRequestsEach = 25;
  std::atomic<int> served{0}, failed{0};
  std::atomic<bool> over_budget{false}, done{false};
  std::thread watcher([&] {
    while (!done) {
      if (loaded_host_bytes(f) > 1000) over_budget = true;
      std::this_thread::sleep_for(2ms);
    }
  });
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(1234 + c);
      for (int i = 0; i < kRequestsEach; ++i) {
        const std::string& name = names[rng() % names.size()];
        std::optional<tc::server::ApiError> error;
        auto lease = f.registry->acquire(name, std::nullopt, error, {}, 100ms);
        if (!lease || lease->name() != name) {
          ++failed;
          continue;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1 + rng() % 4));
        ++served;
      }
    });
  }
  for (auto& t : clients) t.join();
  done = true;
  watcher.join();
  CHECK(served == kClients * kRequestsEach);
  CHECK(failed == 0);
  CHECK_FALSE(over_budget);
  for (const auto& m : names) CHECK(f.loader.count(m) >= 1);
  const std::string text = f.metrics();
  INFO(text);
  CHECK(has(text, "reason=\"gave_way\""));  // busy models made room, not only idle ones
}

TEST_CASE("VRAM budget: placement auto solves within what the other models leave, a dense model counts its file",
          "[server][registry]") {
  FakeMemory memory;
  memory.has_gpu = true;
  memory.gpu_free = 4000;
  Folder f("registry_vram_budget", {"a", "b", "dense"}, 8, "-1", [&](tc::server::RegistryOptions& o, const fs::path& dir) {
    o.serve.device = "cuda";
    o.serve.placement = "auto";
    o.serve.models_vram_budget = "1000";
    o.probes = memory.probes();
    sized_file(dir, "dense", 700);
    // The dense model's own options: no placement (NAME.toml).
    std::ofstream(dir / "dense.toml") << "placement = \"\"\n";
  });
  f.loader.memory = &memory;
  f.loader.gpu_take = {{"a", 600}, {"b", 600}, {"dense", 700}};
  CHECK(f.registry->vram_budget() == 1000);

  f.lease("a");
  CHECK(f.loader.vram_budget_given["a"] == "1000");
  f.lease("b");
  CHECK(f.loader.vram_budget_given["b"] == "400");  // what a left of the budget
  CHECK(f.state("a") == ModelState::Loaded);
  CHECK(f.registry->info("a")->gpu_bytes == 600);  // measured on the (fake) GPU around each load
  CHECK(f.registry->info("b")->gpu_bytes == 400);
  CHECK(loaded_gpu_bytes(f) == 1000);

  // The dense model's first load is expected to take its file (700) on the
  // GPU: both others (idle) unload before it loads.
  f.lease("dense");
  CHECK(f.state("a") == ModelState::Unloaded);
  CHECK(f.state("b") == ModelState::Unloaded);
  CHECK(f.registry->info("dense")->gpu_bytes == 700);
  CHECK(loaded_gpu_bytes(f) <= 1000);

  // Everything unloaded (no snapshot holds a model here): the GPU's free
  // bytes come back where they began. The state turns Unloaded first; the
  // housekeeping thread then shuts the engine down and frees the model.
  for (const char* m : {"a", "b", "dense"}) f.registry->request_unload(m);
  REQUIRE(f.eventually([&] { return loaded_gpu_bytes(f) == 0 && f.state("dense") == ModelState::Unloaded; }));
  CHECK(f.eventually([&] {
    std::lock_guard lock(memory.mutex);
    return memory.gpu_free == 4000;
  }));
}

TEST_CASE("VRAM budget: a placement-auto model needs room for what is not FFN, idle models unload for it",
          "[server][registry]") {
  // a (a file the fake loader "loads") takes the whole budget; b is a real
  // model file: its attention, norms, head and KV cache must fit before its
  // placement can spend the rest on hot neurons, so a unloads first.
  FakeMemory memory;
  memory.has_gpu = true;
  memory.gpu_free = uint64_t{1} << 30;
  constexpr uint64_t kBudget = 64ull << 20;
  Folder f("registry_vram_auto_room", {"a"}, 8, "-1", [&](tc::server::RegistryOptions& o, const fs::path& dir) {
    o.serve.device = "cuda";
    o.serve.placement = "auto";
    o.serve.models_vram_budget = std::to_string(kBudget);
    o.serve.ctx_size = 256;
    o.serve.parallel = 1;
    o.probes = memory.probes();
    auto m = tc::test::sparse_options(dir / "b.gguf");  // a small llama file; no planted sparsity needed
    m.sparse.enabled = false;
    tc::profiler::make_model(m);
  });
  f.loader.memory = &memory;
  f.loader.gpu_take = {{"a", kBudget}, {"b", kBudget}};
  f.lease("a");
  CHECK(f.registry->info("a")->gpu_bytes == kBudget);
  f.lease("b");
  CHECK(f.state("a") == ModelState::Unloaded);
  CHECK(f.loader.vram_budget_given["b"] == std::to_string(kBudget));  // the whole budget, not "0"
  CHECK(loaded_gpu_bytes(f) <= kBudget);
}
