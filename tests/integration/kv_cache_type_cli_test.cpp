// The KV cache's types as a user sets them: `serve --cache-type-k/-v q8_0`
// answers and logs the cache it made, a model whose heads are not whole
// q8_0 blocks fails to load with the reason on /health, and `generate`
// names its cache and refuses a type that is not a KV type.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/integration/cli_generate.h"
#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

TEST_CASE("serve --cache-type-k/-v q8_0 answers and logs its q8_0 cache", "[integration][serve][kv_q8_0]") {
  const auto dir = tc::test::scratch_dir("serve_kv_q8_0");
  // Heads of 32 values: one q8_0 block each.
  const auto model = tc::test::make_test_model(
      dir, "tiny", "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 2 --n-head-kv 1 --n-vocab 1024");
  tc::test::ServerProcess server(model,
                                 {"--cache-type-k", "q8_0", "--cache-type-v", "q8_0", "--parallel", "2", "--ctx-size",
                                  "256"},
                                 dir);
  auto client = server.client();
  CHECK_THAT(server.log_when_contains("KV cache: "),
             Catch::Contains("KV cache: 2 slots x 256 positions, q8_0 keys and values"));
  const auto r = tc::test::post_json(client, "/v1/completions",
                                     {{"prompt", "Hello world"}, {"max_tokens", 8}, {"temperature", 0}});
  INFO(r.body.dump());
  REQUIRE(r.status == 200);
  CHECK(r.body["usage"]["completion_tokens"] == 8);
  CHECK(server.stop() == 0);
}

TEST_CASE("serve with a q8_0 cache on heads that are not whole blocks fails to load, saying why",
          "[integration][serve][kv_q8_0]") {
  const auto dir = tc::test::scratch_dir("serve_kv_q8_0_head16");
  const auto model = tc::test::make_test_model(
      dir, "tiny", "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024");
  tc::test::ServerLaunch launch;
  launch.require_ready = false;
  tc::test::ServerProcess server(launch, model, {"--cache-type-v", "q8_0"}, dir);
  auto client = server.client();
  const auto [status, body] = tc::test::wait_until_loaded(client);
  INFO(body);
  CHECK(status == 503);
  CHECK_THAT(json::parse(body)["error"]["message"].get<std::string>(),
             Catch::Contains("--cache-type-k/--cache-type-v") && Catch::Contains("multiple of 32") &&
                 Catch::Contains("16"));
  CHECK(server.stop() == 0);
}

TEST_CASE("generate names its KV cache and refuses a cache type that is not f16 or q8_0",
          "[integration][generate][kv_q8_0]") {
  const auto dir = tc::test::scratch_dir("generate_kv_q8_0");
  const auto model = tc::test::make_test_model(
      dir, "tiny", "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 2 --n-head-kv 1 --n-vocab 1024");
  const std::string run = tc::test::thermocline_binary().string() + " generate -m " + model.string() +
                          " -p Hello -n 4 --temp 0 -t 1";
  const auto q8 = tc::test::run_command(run + " --cache-type-k q8_0 --cache-type-v q8_0");
  INFO(q8.output);
  REQUIRE(q8.exit_code == 0);
  CHECK_THAT(q8.output, Catch::Contains("KV cache 1 slot x") && Catch::Contains("q8_0 keys and values"));
  const auto mixed = tc::test::run_command(run + " --cache-type-k q8_0");
  CHECK(mixed.exit_code == 0);
  CHECK_THAT(mixed.output, Catch::Contains("q8_0 keys, f16 values"));
  const auto bad = tc::test::run_command(run + " --cache-type-k q4_0");
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Catch::Contains("--cache-type-k"));
}
