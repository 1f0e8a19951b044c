// A models folder served by a ModelRegistry with a fake loader (no model
// files needed), for the registry's tests: FakeLoader counts loads, can fail
// or slow them, and with a FakeMemory takes host and GPU bytes for each
// loaded model (given back when it unloads); Folder creates the files and
// leases models as requests do.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/model_registry.h"
#include "server/server_context.h"
#include "tests/test_util.h"

namespace tc::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using tc::server::ModelRegistry;
using tc::server::ModelState;

// The memory the registry measures (its MemoryProbes): the resident set
// and one GPU's free bytes, as fake loads take and give them back.
struct FakeMemory {
  std::mutex mutex;
  uint64_t rss = uint64_t{1} << 30;
  uint64_t gpu_free = 0;  // GPU 0's free bytes (the GPU exists when has_gpu)
  bool has_gpu = false;

  tc::server::MemoryProbes probes() {
    return {.rss = [this] {
              std::lock_guard lock(mutex);
              return rss;
            },
            .gpu_free = [this](int index) -> std::optional<uint64_t> {
              std::lock_guard lock(mutex);
              if (!has_gpu || index != 0) return std::nullopt;
              return gpu_free;
            }};
  }
};

struct FakeLoader {
  std::mutex mutex;
  std::map<std::string, int> loads;
  std::map<std::string, int> ctx_size;  // the options each load got
  std::set<std::string> failing;
  std::map<std::string, std::chrono::milliseconds> delay;
  // With `memory`: what a load of each model takes. On the GPU, placement
  // "auto" takes its gpu_take but at most the vram_budget it was given.
  FakeMemory* memory = nullptr;
  std::map<std::string, uint64_t> host_take, gpu_take;
  std::map<std::string, std::string> vram_budget_given;  // the last load's options.vram_budget

  tc::server::ModelLoadFunction fn() {
    return [this](const fs::path& path, const tc::config::ServeOptions& o, const std::string& name) {
      std::chrono::milliseconds wait{0};
      {
        std::lock_guard lock(mutex);
        ++loads[name];
        ctx_size[name] = static_cast<int>(o.ctx_size);
        if (failing.count(name)) throw std::runtime_error(path.string() + ": not a GGUF file (bad magic)");
        if (auto it = delay.find(name); it != delay.end()) wait = it->second;
      }
      std::this_thread::sleep_for(wait);
      uint64_t host = 0, gpu = 0;
      if (memory) {
        std::lock_guard lock(mutex);
        vram_budget_given[name] = o.vram_budget;
        host = host_take[name];
        gpu = gpu_take[name];
        if (o.placement == "auto" && !o.vram_budget.empty()) gpu = std::min<uint64_t>(gpu, std::stoull(o.vram_budget));
        std::lock_guard mem(memory->mutex);
        if (gpu > memory->gpu_free) throw std::runtime_error(path.string() + ": out of GPU memory");
        memory->rss += host;
        memory->gpu_free -= gpu;
      }
      FakeMemory* m = memory;
      auto give_back = [m, host, gpu](tc::server::ServingModel* s) {
        if (m) {
          std::lock_guard lock(m->mutex);
          m->rss -= host;
          m->gpu_free += gpu;
        }
        delete s;
      };
      std::shared_ptr<tc::server::ServingModel> s(new tc::server::ServingModel, give_back);
      s->model_id = name;
      s->options = o;
      // An engine without a model fails at once; the registry only needs its lifecycle.
      s->engine = std::make_shared<tc::runtime::Engine>(nullptr, tc::runtime::EngineOptions{});
      return s;
    };
  }
  int count(const std::string& name) {
    std::lock_guard lock(mutex);
    return loads[name];
  }
};

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline void touch(const fs::path& p, const std::string& text = "junk") { std::ofstream(p, std::ios::app) << text; }

struct Folder {
  fs::path dir;
  FakeLoader loader;
  std::unique_ptr<ModelRegistry> registry;

  // `configure` may change the options and the files before the registry starts.
  Folder(const std::string& name, const std::vector<std::string>& models, int max_loaded,
         const std::string& keep_alive = "-1",
         const std::function<void(tc::server::RegistryOptions&, const fs::path& dir)>& configure = {}) {
    dir = tc::test::scratch_dir(name);
    for (const auto& m : models) touch(dir / (m + ".gguf"));
    tc::server::RegistryOptions o;
    o.serve.models_dir = dir;
    o.serve.max_loaded_models = max_loaded;
    o.serve.keep_alive = keep_alive;
    o.serve.models_ram_budget = "64GiB";
    o.load = loader.fn();
    o.scan_interval = 50ms;
    if (configure) configure(o, dir);
    registry = std::make_unique<ModelRegistry>(o);
    REQUIRE(registry->start());
  }

  std::shared_ptr<tc::server::ModelLease> lease(const std::string& name,
                                                std::optional<tc::config::KeepAlive> keep_alive = std::nullopt) {
    std::optional<tc::server::ApiError> error;
    auto l = registry->acquire(name, keep_alive, error, {}, 100ms);
    INFO(name << ": " << (error ? error->message : std::string()));
    REQUIRE(l);
    return l;
  }
  ModelState state(const std::string& name) {
    auto info = registry->info(name);
    REQUIRE(info);
    return info->state;
  }
  // The registry's per-model Prometheus series.
  std::string metrics() {
    tc::server::ModelTotals totals;
    return registry->render_metrics(totals);
  }
  // Polls until `pred` holds (5 s at most).
  template <class Pred>
  bool eventually(Pred pred) {
    for (int i = 0; i < 250; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(20ms);
    }
    return pred();
  }
};

}  // namespace tc::test
