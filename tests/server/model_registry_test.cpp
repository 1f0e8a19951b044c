// ModelRegistry with a fake loader (no model files needed): on-demand loads
// within max_loaded_models, least recently used idle model unloaded first,
// models in use never unloaded, keep_alive, failures naming the file and
// retried once it changes, files added and removed, NAME.toml, waiting
// (with ticks, as streams ping) without blocking other models.
#include "server/model_registry.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <thread>

#include "tests/server/fake_model_folder.h"

using namespace tc::test;

TEST_CASE("models load on demand, at most max_loaded_models, least recently used idle one unloaded first",
          "[server][registry]") {
  Folder f("registry_lru", {"a", "b", "c"}, 2);
  for (const auto& m : f.registry->list()) CHECK(m.state == ModelState::Unloaded);
  CHECK(f.registry->list().size() == 3);
  f.lease("a");
  f.lease("b");
  f.lease("a");  // b is now the least recently used
  f.lease("c");
  CHECK(f.state("a") == ModelState::Loaded);
  CHECK(f.state("b") == ModelState::Unloaded);
  CHECK(f.state("c") == ModelState::Loaded);
  CHECK(f.loader.count("a") == 1);
  CHECK(f.loader.count("b") == 1);

  tc::server::ModelTotals totals;
  const std::string metrics = f.registry->render_metrics(totals);
  CHECK(metrics.find("thermocline_model_loads_total{model=\"a\"} 1") != std::string::npos);
  CHECK(metrics.find("thermocline_model_unloads_total{model=\"b\",reason=\"evicted\"} 1") != std::string::npos);
  CHECK(metrics.find("thermocline_model_state{model=\"b\",state=\"unloaded\"} 1") != std::string::npos);
}

TEST_CASE("a model with requests in flight is never unloaded, a load waits for one to go idle",
          "[server][registry]") {
  Folder f("registry_busy", {"a", "b"}, 1);
  auto held = f.lease("a");
  auto other = std::async(std::launch::async, [&] { return f.lease("b"); });
  CHECK(other.wait_for(400ms) == std::future_status::timeout);  // b waits: a is busy
  CHECK(f.state("a") == ModelState::Loaded);
  CHECK(f.state("b") == ModelState::Loading);
  held.reset();  // a goes idle: b evicts it
  REQUIRE(other.wait_for(5s) == std::future_status::ready);
  auto b = other.get();
  CHECK(f.state("a") == ModelState::Unloaded);
  CHECK(f.state("b") == ModelState::Loaded);
}

TEST_CASE("keep_alive 0 unloads a model once idle, -1 keeps it, a duration expires", "[server][registry]") {
  Folder f("registry_keep_alive", {"a", "b", "c"}, 3, "-1");
  f.lease("a", tc::config::KeepAlive{false, 0ms}).reset();
  f.lease("b").reset();
  f.lease("c", tc::config::KeepAlive{false, 300ms}).reset();
  CHECK(f.eventually([&] { return f.state("a") == ModelState::Unloaded; }));
  CHECK(f.eventually([&] { return f.state("c") == ModelState::Unloaded; }));
  CHECK(f.state("b") == ModelState::Loaded);
  // While a request holds it, keep_alive 0 waits for the end.
  auto held = f.lease("b", tc::config::KeepAlive{false, 0ms});
  std::this_thread::sleep_for(300ms);
  CHECK(f.state("b") == ModelState::Loaded);
  held.reset();
  CHECK(f.eventually([&] { return f.state("b") == ModelState::Unloaded; }));
  CHECK(f.registry->request_unload("a"));
  CHECK_FALSE(f.registry->request_unload("nope"));
}

TEST_CASE("a model that fails to load names the file and is retried once the file changes", "[server][registry]") {
  Folder f("registry_failure", {"good", "bad"}, 2);
  {
    std::lock_guard lock(f.loader.mutex);
    f.loader.failing.insert("bad");
  }
  std::optional<tc::server::ApiError> error;
  CHECK_FALSE(f.registry->acquire("bad", std::nullopt, error, {}, 100ms));
  REQUIRE(error);
  CHECK(error->status == 500);
  CHECK(error->code == "model_load_failed");
  CHECK(error->message.find("bad.gguf") != std::string::npos);
  CHECK(error->message.find("bad magic") != std::string::npos);
  CHECK(f.state("bad") == ModelState::Failed);
  // Until the file changes: the same error at once, no second attempt.
  error.reset();
  CHECK_FALSE(f.registry->try_acquire("bad", std::nullopt, error));
  CHECK(error);
  CHECK(f.loader.count("bad") == 1);
  // The others serve; /health has something to serve.
  f.lease("good");
  CHECK(f.registry->unservable_reason().empty());
  {
    std::lock_guard lock(f.loader.mutex);
    f.loader.failing.clear();
  }
  std::this_thread::sleep_for(20ms);
  touch(f.dir / "bad.gguf", "more");
  CHECK(f.eventually([&] { return f.state("bad") == ModelState::Unloaded; }));
  f.lease("bad");
  CHECK(f.loader.count("bad") == 2);
}

TEST_CASE("files added to and removed from the folder appear and disappear", "[server][registry]") {
  Folder f("registry_watch", {"a", "b"}, 2);
  auto b = f.lease("b");
  touch(f.dir / "c.gguf");
  touch(f.dir / "c.stats.gguf");  // a sidecar, not a model
  touch(f.dir / "notes.txt");
  CHECK(f.eventually([&] { return f.registry->info("c").has_value(); }));
  CHECK_FALSE(f.registry->info("c.stats").has_value());
  CHECK(f.registry->list().size() == 3);
  fs::remove(f.dir / "a.gguf");
  fs::remove(f.dir / "b.gguf");
  CHECK(f.eventually([&] { return !f.registry->info("a").has_value(); }));
  // b is in use: gone from the list, unloaded once its request ends.
  CHECK(f.eventually([&] { return !f.registry->info("b").has_value(); }));
  std::optional<tc::server::ApiError> error;
  CHECK(f.registry->resolve("a", error).empty());
  REQUIRE(error);
  CHECK(error->status == 404);
  CHECK(error->code == "model_not_found");
  CHECK(error->message.find("c") != std::string::npos);
  CHECK(f.registry->peek("b") != nullptr);  // still loaded for its request
  b.reset();
  CHECK(f.eventually([&] { return f.registry->peek("b") == nullptr; }));
}

TEST_CASE("NAME.toml gives a model aliases and its own options, a bad one fails its loads", "[server][registry]") {
  Folder f("registry_sidecar", {"a", "b"}, 2);
  std::ofstream(f.dir / "a.toml") << "ctx_size = 256\naliases = [\"alpha\"]\n";
  std::ofstream(f.dir / "b.toml") << "ctx_size = \"wide\"\n";
  CHECK(f.eventually([&] {
    std::optional<tc::server::ApiError> e;
    return f.registry->resolve("alpha", e) == "a";
  }));
  std::optional<tc::server::ApiError> error;
  CHECK(f.registry->resolve("a:latest", error) == "a");
  CHECK(f.registry->resolve("", error).empty());
  REQUIRE(error);
  CHECK(error->status == 400);  // two models: a request must name one
  f.lease(f.registry->resolve("alpha", error));
  CHECK(f.loader.ctx_size["a"] == 256);
  error.reset();
  CHECK_FALSE(f.registry->acquire("b", std::nullopt, error, {}, 100ms));
  REQUIRE(error);
  CHECK(error->message.find("b.toml") != std::string::npos);
  CHECK(error->message.find("ctx_size") != std::string::npos);
  CHECK(f.loader.count("b") == 0);
}

TEST_CASE("a slow load does not hold up other models, and its waiters tick", "[server][registry]") {
  Folder f("registry_slow", {"fast", "slow"}, 2);
  {
    std::lock_guard lock(f.loader.mutex);
    f.loader.delay["slow"] = 600ms;
  }
  f.lease("fast").reset();
  std::atomic<int> ticks{0};
  auto slow = std::async(std::launch::async, [&] {
    std::optional<tc::server::ApiError> error;
    return f.registry->acquire("slow", std::nullopt, error, [&] { return ++ticks, true; }, 50ms);
  });
  std::this_thread::sleep_for(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  f.lease("fast").reset();
  CHECK(std::chrono::steady_clock::now() - t0 < 200ms);
  REQUIRE(slow.wait_for(5s) == std::future_status::ready);
  CHECK(slow.get());
  CHECK(ticks.load() >= 4);
  // A waiter that gives up (its client left) gets nothing.
  f.registry->request_unload("slow");
  CHECK(f.eventually([&] { return f.state("slow") == ModelState::Unloaded; }));
  std::optional<tc::server::ApiError> error;
  CHECK_FALSE(f.registry->acquire("slow", std::nullopt, error, [] { return false; }, 50ms));
  CHECK_FALSE(error);
}
