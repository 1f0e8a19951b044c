// A models folder served by a ModelRegistry with a fake loader (no model
// files needed), for the registry's tests: FakeLoader counts loads, can fail
// or slow them; Folder creates the files and leases models as requests do.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
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

struct FakeLoader {
  std::mutex mutex;
  std::map<std::string, int> loads;
  std::map<std::string, int> ctx_size;  // the options each load got
  std::set<std::string> failing;
  std::map<std::string, std::chrono::milliseconds> delay;

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
      auto s = std::make_shared<tc::server::ServingModel>();
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

inline void touch(const fs::path& p, const std::string& text = "junk") { std::ofstream(p, std::ios::app) << text; }

struct Folder {
  fs::path dir;
  FakeLoader loader;
  std::unique_ptr<ModelRegistry> registry;

  Folder(const std::string& name, const std::vector<std::string>& models, int max_loaded,
         const std::string& keep_alive = "-1") {
    dir = tc::test::scratch_dir(name);
    for (const auto& m : models) touch(dir / (m + ".gguf"));
    tc::server::RegistryOptions o;
    o.serve.models_dir = dir;
    o.serve.max_loaded_models = max_loaded;
    o.serve.keep_alive = keep_alive;
    o.serve.models_ram_budget = "64GiB";
    o.load = loader.fn();
    o.scan_interval = 50ms;
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
