// ModelRegistry: how long a request waits for its model. After
// load_timeout_s it gets a 503 saying what the model waited for (still
// loading, or room held by busy models) while the load itself goes on; a
// waiter whose tick says its client left stops at once, with no error; the
// waiters and the timeouts show in the per-model metrics.
#include "server/model_registry.h"

#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "tests/server/fake_model_folder.h"

using namespace tc::test;

namespace {

auto with_load_timeout(double seconds) {
  return [seconds](tc::server::RegistryOptions& o, const fs::path&) { o.serve.load_timeout_s = seconds; };
}

}  // namespace

TEST_CASE("a request waiting longer than load_timeout_s for a load gets a 503, the load goes on",
          "[server][registry]") {
  Folder f("registry_load_timeout", {"slow"}, 2, "-1", with_load_timeout(0.3));
  f.loader.delay["slow"] = 1500ms;
  std::optional<tc::server::ApiError> error;
  const auto t0 = std::chrono::steady_clock::now();
  auto lease = f.registry->acquire("slow", std::nullopt, error, {}, 100ms);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_FALSE(lease);
  REQUIRE(error);
  CHECK(error->status == 503);
  CHECK(error->code == "model_load_timeout");
  CHECK(error->message == "the model 'slow' is still loading after 0.3 s (load_timeout_s); try again later");
  CHECK(waited >= 0.3);
  CHECK(waited < 1.2);  // well before the load ends
  CHECK(has(f.metrics(), "thermocline_model_load_timeouts_total{model=\"slow\"} 1"));
  CHECK(has(f.metrics(), "thermocline_model_load_waiters{model=\"slow\"} 0"));
  // The load was not abandoned: the model serves once it is done.
  REQUIRE(f.eventually([&] { return f.state("slow") == ModelState::Loaded; }));
  f.lease("slow");
  CHECK(f.loader.count("slow") == 1);
}

TEST_CASE("a request waiting for room held by busy models times out naming that", "[server][registry]") {
  Folder f("registry_room_timeout", {"a", "b"}, 1, "-1", with_load_timeout(0.3));
  auto a = f.lease("a");  // busy for the whole wait
  std::optional<tc::server::ApiError> error;
  auto b = f.registry->acquire("b", std::nullopt, error, {}, 100ms);
  CHECK_FALSE(b);
  REQUIRE(error);
  CHECK(error->status == 503);
  CHECK(error->message ==
        "the model 'b' is still waiting for room to load after 0.3 s (load_timeout_s): 1 loaded model(s) busy; try "
        "again later");
  a.reset();  // a's request ends: b's load (still going) takes the room
  REQUIRE(f.eventually([&] { return f.state("b") == ModelState::Loaded; }));
  CHECK(f.state("a") == ModelState::Unloaded);
}

TEST_CASE("load_timeout_s 0 waits for as long as the load takes", "[server][registry]") {
  Folder f("registry_no_load_timeout", {"slow"}, 2, "-1", with_load_timeout(0));
  f.loader.delay["slow"] = 700ms;
  f.lease("slow");
  CHECK(f.state("slow") == ModelState::Loaded);
}

TEST_CASE("a waiter whose client left stops at once, with no error, and no longer counts", "[server][registry]") {
  Folder f("registry_client_left", {"slow"}, 2, "-1", with_load_timeout(30));
  f.loader.delay["slow"] = 1500ms;
  std::atomic<bool> client_there{true};
  auto waiting = std::async(std::launch::async, [&] {
    std::optional<tc::server::ApiError> error;
    auto lease = f.registry->acquire("slow", std::nullopt, error, [&] { return client_there.load(); }, 20ms);
    return std::make_pair(lease != nullptr, error.has_value());
  });
  REQUIRE(f.eventually([&] { return has(f.metrics(), "thermocline_model_load_waiters{model=\"slow\"} 1"); }));
  client_there = false;
  REQUIRE(waiting.wait_for(500ms) == std::future_status::ready);
  const auto [leased, errored] = waiting.get();
  CHECK_FALSE(leased);
  CHECK_FALSE(errored);
  CHECK(has(f.metrics(), "thermocline_model_load_waiters{model=\"slow\"} 0"));
  CHECK(has(f.metrics(), "thermocline_model_load_timeouts_total{model=\"slow\"} 0"));
  CHECK(f.state("slow") == ModelState::Loading);  // the load goes on
}
