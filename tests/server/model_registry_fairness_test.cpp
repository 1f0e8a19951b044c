// ModelRegistry when no loaded model is idle and another must load: the
// least recently used busy model gives way (new requests wait, it unloads
// once its requests end, then loads again for them), loads take room in
// the order their requests arrived, the model that gave way last is not
// asked again next, and steady traffic on the loaded models cannot starve
// a third one, with no request lost.
#include "server/model_registry.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <thread>

#include "tests/server/fake_model_folder.h"

using namespace tc::test;

namespace {

using Lease = std::shared_ptr<tc::server::ModelLease>;

std::future<Lease> lease_async(Folder& f, const std::string& name) {
  return std::async(std::launch::async, [&f, name] { return f.lease(name); });
}

bool giving_way(Folder& f, const std::string& name) {
  auto info = f.registry->info(name);
  return info && info->giving_way;
}

// Requests `name` without waiting: a lease, or null when it must wait.
Lease try_lease(Folder& f, const std::string& name) {
  std::optional<tc::server::ApiError> error;
  auto lease = f.registry->try_acquire(name, std::nullopt, error);
  CHECK_FALSE(error);
  return lease;
}

}  // namespace

TEST_CASE("a busy model gives way to a waiting one: new requests wait, it unloads once its requests end",
          "[server][registry]") {
  Folder f("registry_give_way", {"a", "b", "c"}, 2);
  Lease a = f.lease("a");
  Lease b = f.lease("b");  // a is the least recently used
  auto c = lease_async(f, "c");
  REQUIRE(f.eventually([&] { return giving_way(f, "a"); }));
  CHECK_FALSE(giving_way(f, "b"));
  CHECK(f.state("a") == ModelState::Loaded);
  CHECK_FALSE(try_lease(f, "a"));  // no new request starts on it
  auto a_again = lease_async(f, "a");
  CHECK(c.wait_for(300ms) == std::future_status::timeout);  // a's request is still in flight
  a.reset();
  REQUIRE(c.wait_for(5s) == std::future_status::ready);
  Lease c_lease = c.get();
  CHECK(c_lease);
  CHECK(has(f.metrics(), "thermocline_model_unloads_total{model=\"a\",reason=\"gave_way\"} 1"));
  // The request that waited for a loads it again once room is made (c ends here).
  c_lease.reset();
  REQUIRE(a_again.wait_for(5s) == std::future_status::ready);
  CHECK(a_again.get());
  CHECK(f.loader.count("a") == 2);
}

TEST_CASE("a model asked to give way serves again when the waiting load finds room otherwise",
          "[server][registry]") {
  Folder f("registry_give_way_withdrawn", {"a", "b", "c"}, 2);
  Lease a = f.lease("a");
  Lease b = f.lease("b");
  auto c = lease_async(f, "c");
  REQUIRE(f.eventually([&] { return giving_way(f, "a"); }));
  b.reset();  // b goes idle: unloading it makes the room, a need not give way
  REQUIRE(c.wait_for(5s) == std::future_status::ready);
  CHECK(c.get());
  CHECK(f.state("b") == ModelState::Unloaded);
  CHECK_FALSE(giving_way(f, "a"));
  CHECK(try_lease(f, "a"));
  CHECK(f.loader.count("a") == 1);
}

TEST_CASE("loads waiting for room take it in the order their requests arrived", "[server][registry]") {
  Folder f("registry_room_order", {"a", "b", "c"}, 1);
  Lease a = f.lease("a");
  auto b = lease_async(f, "b");
  REQUIRE(f.eventually([&] { return f.state("b") == ModelState::Loading; }));
  auto c = lease_async(f, "c");
  REQUIRE(f.eventually([&] { return f.state("c") == ModelState::Loading; }));
  a.reset();
  REQUIRE(b.wait_for(5s) == std::future_status::ready);
  Lease b_lease = b.get();
  CHECK(f.eventually([&] { return giving_way(f, "b"); }));  // c asks b, whose request is in flight
  CHECK(c.wait_for(300ms) == std::future_status::timeout);
  b_lease.reset();
  REQUIRE(c.wait_for(5s) == std::future_status::ready);
  CHECK(c.get());
}

TEST_CASE("the model that gave way last is not asked again next while another can be", "[server][registry]") {
  Folder f("registry_give_way_turns", {"a", "b", "c"}, 2);
  Lease a = f.lease("a");
  Lease b = f.lease("b");
  auto c = lease_async(f, "c");
  REQUIRE(f.eventually([&] { return giving_way(f, "a"); }));
  auto a_again = lease_async(f, "a");
  a.reset();
  REQUIRE(c.wait_for(5s) == std::future_status::ready);
  c.get().reset();  // c idle: a's load unloads it
  REQUIRE(a_again.wait_for(5s) == std::future_status::ready);
  a = a_again.get();
  Lease b2 = f.lease("b");  // a is the least recently used again, but it gave way last
  auto c2 = lease_async(f, "c");
  REQUIRE(f.eventually([&] { return giving_way(f, "b"); }));
  CHECK_FALSE(giving_way(f, "a"));
  b.reset();
  b2.reset();
  REQUIRE(c2.wait_for(5s) == std::future_status::ready);
  CHECK(c2.get());
  const std::string m = f.metrics();
  CHECK(has(m, "thermocline_model_unloads_total{model=\"a\",reason=\"gave_way\"} 1"));
  CHECK(has(m, "thermocline_model_unloads_total{model=\"b\",reason=\"gave_way\"} 1"));
  CHECK(has(m, "thermocline_model_unloads_total{model=\"c\",reason=\"evicted\"} 1"));
}

TEST_CASE("steady traffic on two loaded models does not starve a third, and no request is lost",
          "[server][registry]") {
  Folder f("registry_no_starving", {"a", "b", "c"}, 2);
  f.lease("a").reset();
  f.lease("b").reset();
  // Three clients per model, each holding its lease 15 ms and asking again
  // at once: a and b are never idle for long.
  struct Traffic {
    std::atomic<int> issued{0}, served{0}, errors{0};
  };
  std::map<std::string, Traffic> traffic;  // filled before the clients start, then only looked up
  traffic["a"];
  traffic["b"];
  std::atomic<bool> running{true};
  std::vector<std::future<void>> clients;
  for (const std::string model : {"a", "b"}) {
    for (int i = 0; i < 3; ++i) {
      clients.push_back(std::async(std::launch::async, [&, model, i] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5 * i));
        Traffic& t = traffic.at(model);
        while (running.load()) {
          ++t.issued;
          std::optional<tc::server::ApiError> error;
          auto lease = f.registry->acquire(model, std::nullopt, error, {}, 50ms);
          if (!lease) {
            ++t.errors;
            continue;
          }
          std::this_thread::sleep_for(15ms);
          lease.reset();
          ++t.served;
        }
      }));
    }
  }
  auto served_total = [&] { return traffic.at("a").served.load() + traffic.at("b").served.load(); };
  REQUIRE(f.eventually([&] { return traffic.at("a").served >= 20 && traffic.at("b").served >= 20; }));

  for (int round = 0; round < 4; ++round) {
    INFO("round " << round);
    const int before = served_total();
    auto c = lease_async(f, "c");
    // Bounded by a's or b's requests in flight (three at most), not by the traffic.
    REQUIRE(c.wait_for(30s) == std::future_status::ready);
    const int served_meanwhile = served_total() - before;
    CHECK(c.get());
    CHECK(served_meanwhile <= 150);
    // The model that gave way loads again for the requests that waited for it.
    const int a_then = traffic.at("a").served, b_then = traffic.at("b").served;
    REQUIRE(f.eventually([&] { return traffic.at("a").served >= a_then + 5 && traffic.at("b").served >= b_then + 5; }));
  }

  running.store(false);
  for (auto& client : clients) REQUIRE(client.wait_for(30s) == std::future_status::ready);
  for (const auto& [model, t] : traffic) {
    INFO(model);
    CHECK(t.errors.load() == 0);
    CHECK(t.served.load() == t.issued.load());
  }
  CHECK(has(f.metrics(), "reason=\"gave_way\""));
}
