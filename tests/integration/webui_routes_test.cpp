// The web page's routes and the engine view's JSON through the real binary:
// GET / and /webui/NAME are public even with --api-key, --no-webui removes
// them, /v1/engine/stats needs the key and reports the sparse FFN's
// per-layer work (or says "dense"), and /v1/engine/firing_curve serves the
// loaded stats file's curve.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace {

const char* kSparseModelFlags =
    "--sparse --n-embd 64 --n-layer 3 --n-ff 256 --n-head 4 --n-head-kv 2 --n-vocab 1024 --predictor-rank 16 --seed 7";

httplib::Headers bearer(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }

}  // namespace

TEST_CASE("the web page is public, cached by ETag, and the engine stats need the key", "[integration][webui]") {
  const auto dir = tc::test::scratch_dir("webui_routes");
  const auto model = tc::test::make_test_model(dir, "sparse", kSparseModelFlags);
  tc::test::ServerProcess server(model, {"--api-key", "sk-web", "--alias", "sparse", "--threads", "2"}, dir);
  auto client = server.client();

  auto page = client.Get("/");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->get_header_value("Content-Type") == "text/html; charset=utf-8");
  CHECK_THAT(page->body, Catch::Contains("<title>Thermocline</title>"));
  CHECK_THAT(page->get_header_value("Content-Security-Policy"), Catch::Contains("script-src 'self'"));
  const std::string etag = page->get_header_value("ETag");
  REQUIRE(etag.size() > 2);
  auto again = client.Get("/", {{"If-None-Match", etag}});
  REQUIRE(again);
  CHECK(again->status == 304);
  CHECK(again->body.empty());

  auto script = client.Get("/webui/app.js");
  REQUIRE(script);
  CHECK(script->status == 200);
  CHECK(script->get_header_value("Content-Type") == "text/javascript; charset=utf-8");
  CHECK_THAT(script->body, Catch::Contains("v1/models"));
  auto config = client.Get("/webui/config.json");
  REQUIRE(config);
  CHECK(json::parse(config->body) == json{{"api_key_required", true}});
  auto missing = client.Get("/webui/nope.js");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  CHECK(json::parse(missing->body)["error"]["type"] == "invalid_request_error");

  // The API behind the page still needs the key.
  auto refused = client.Get("/v1/engine/stats");
  REQUIRE(refused);
  CHECK(refused->status == 401);
  CHECK(json::parse(refused->body)["error"]["code"] == "invalid_api_key");

  auto before = client.Get("/v1/engine/stats", bearer("sk-web"));
  REQUIRE(before);
  REQUIRE(before->status == 200);
  const json idle = json::parse(before->body);
  CHECK(idle["object"] == "engine.stats");
  CHECK(idle["state"] == "ready");
  CHECK(idle["slots"]["busy"] == 0);
  CHECK(idle["ffn"]["mode"] == "sparse");
  CHECK(idle["ffn"]["window_tokens"] == 0);
  CHECK(idle["ffn"]["layers"]["active"] == json::array({nullptr, nullptr, nullptr}));
  CHECK(idle["bytes_per_token"]["host"].is_null());  // nothing measured yet
  CHECK(idle["firing_curve"] == false);

  const auto gen = tc::test::post_json(client, "/v1/completions",
                                       {{"prompt", "The quick brown fox"}, {"max_tokens", 12}, {"temperature", 0}},
                                       bearer("sk-web"));
  REQUIRE(gen.status == 200);
  const int64_t n_generated = gen.body["usage"]["completion_tokens"].get<int64_t>();
  // The engine publishes its counters after the step that finished the
  // request, which may be just after the response.
  json s;
  for (int i = 0; i < 100; ++i) {
    auto after = client.Get("/engine/stats", bearer("sk-web"));
    REQUIRE(after);
    REQUIRE(after->status == 200);
    s = json::parse(after->body);
    if (s["tokens"]["generated_total"] == n_generated && s["slots"]["busy"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  INFO(s.dump(2));
  CHECK(s["tokens"]["generated_total"] == n_generated);
  CHECK(s["ffn"]["n_layer"] == 3);
  CHECK(s["ffn"]["n_ff"] == 256);
  CHECK(s["ffn"]["window_tokens"].get<int64_t>() >= n_generated - 1);
  CHECK(s["ffn"]["window_steps"].get<int64_t>() >= n_generated - 1);
  for (const std::string row : {"active", "predicted"}) {
    REQUIRE(s["ffn"]["layers"][row].size() == 3);
    for (const auto& v : s["ffn"]["layers"][row]) {
      REQUIRE(v.is_number());
      CHECK(v.get<double>() > 0.0);
      CHECK(v.get<double>() <= 1.0);
    }
  }
  // Computed neurons are a subset of the predicted ones.
  for (size_t l = 0; l < 3; ++l) CHECK(s["ffn"]["layers"]["active"][l] <= s["ffn"]["layers"]["predicted"][l]);
  CHECK_FALSE(s["ffn"]["layers"].contains("hot"));  // no GPU split
  CHECK(s["bytes_per_token"]["host"].get<double>() > 0.0);
  CHECK(s["bytes_per_token"]["vram"].is_null());
  CHECK(s["kv"]["capacity"].get<int64_t>() > 0);
  // The decode steps' time against the modelled limit (host bytes over the
  // host bandwidth measured at start); no split on the CPU.
  const json& t = s["time_per_token"];
  CHECK(t["window_steps"].get<int64_t>() >= std::min<int64_t>(n_generated - 1, 32));
  CHECK(t["tokens"] == t["window_steps"]);  // one sequence per step
  CHECK(t["sequences_per_step"] == 1.0);
  CHECK(t["step_ms"].get<double>() > 0.0);
  CHECK(t["wall_ms"] == t["step_ms"]);
  CHECK_FALSE(t["split_timed"].get<bool>());
  CHECK(t["gpu_ms"].is_null());
  CHECK(t["cpu_ms"].is_null());
  const double host_gbs = t["bandwidths_gbs"]["host"].get<double>();
  CHECK(host_gbs > 0.1);
  CHECK(t["bandwidths_gbs"]["device"].is_null());
  CHECK(t["limit_ms"].get<double>() ==
        Approx(s["bytes_per_token"]["host"].get<double>() / (host_gbs * 1e9) * 1e3).epsilon(1e-9));

  auto curve = client.Get("/v1/engine/firing_curve", bearer("sk-web"));
  REQUIRE(curve);
  CHECK(curve->status == 404);
  CHECK(json::parse(curve->body)["error"]["code"] == "no_stats_file");

  auto metrics = client.Get("/metrics", bearer("sk-web"));
  REQUIRE(metrics);
  CHECK_THAT(metrics->body, Catch::Contains("route=\"/\",status=\"200\"") &&
                                Catch::Contains("route=\"/v1/engine/stats\",status=\"200\""));
  CHECK(server.stop() == 0);
}

TEST_CASE("the page is off with --no-webui, and a dense model's stats say dense", "[integration][webui]") {
  const auto dir = tc::test::scratch_dir("webui_off");
  const auto model = tc::test::make_test_model(
      dir, "dense", "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024");
  tc::test::ServerProcess server(model, {"--no-webui", "--threads", "2"}, dir);
  auto client = server.client();
  for (const char* path : {"/", "/webui/app.js", "/webui/config.json"}) {
    INFO(path);
    auto r = client.Get(path);
    REQUIRE(r);
    CHECK(r->status == 404);
    CHECK(json::parse(r->body)["error"]["message"] == std::string("no route GET ") + path);
  }
  const auto gen = tc::test::post_json(client, "/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 4}, {"ignore_eos", true}});
  REQUIRE(gen.status == 200);
  auto stats = client.Get("/v1/engine/stats");
  REQUIRE(stats);
  REQUIRE(stats->status == 200);
  const json s = json::parse(stats->body);
  INFO(s.dump(2));
  CHECK(s["ffn"]["mode"] == "dense");
  CHECK(s["ffn"]["layers"].is_null());
  CHECK_FALSE(s["ffn"].contains("window_tokens"));
  CHECK(s["bytes_per_token"]["host"].get<double>() > 0.0);  // every FFN row, modelled from the tensor sizes
  // The dense FFN's decode steps are timed too, against the same model.
  CHECK(s["time_per_token"]["window_steps"].get<int64_t>() >= 3);
  CHECK(s["time_per_token"]["limit_ms"].get<double>() > 0.0);
  CHECK(server.stop() == 0);
}

TEST_CASE("THERMOCLINE_WEBUI=false turns the page off, and a loaded stats file gives the firing curve", "[integration][webui]") {
  const auto dir = tc::test::scratch_dir("webui_curve");
  const auto model = tc::test::make_test_model(dir, "sparse", kSparseModelFlags);
  const std::string stats = (dir / "sparse.stats").string();
  const std::string corpus = (tc::test::source_dir() / "README.md").string();
  auto prof = tc::test::run_command(tc::test::thermocline_binary().string() + " profile -m " + model.string() +
                                    " --corpus " + corpus + " -o " + stats + " --ctx 64 -n 256 -t 2");
  INFO(prof.output);
  REQUIRE(prof.exit_code == 0);
  tc::test::ServerLaunch launch;
  launch.env = {"THERMOCLINE_WEBUI=false"};
  tc::test::ServerProcess server(launch, model, {"--stats", stats, "--threads", "2"}, dir);
  auto client = server.client();
  auto page = client.Get("/");
  REQUIRE(page);
  CHECK(page->status == 404);
  auto s = client.Get("/v1/engine/stats");
  REQUIRE(s);
  CHECK(json::parse(s->body)["firing_curve"] == true);
  auto curve = client.Get("/v1/engine/firing_curve");
  REQUIRE(curve);
  REQUIRE(curve->status == 200);
  const json c = json::parse(curve->body);
  CHECK(c["object"] == "engine.firing_curve");
  CHECK(c["n_tokens"].get<int64_t>() >= 256);
  CHECK(c["n_ff"] == 256);
  REQUIRE(c["layers"].size() == 3);
  for (const auto& layer : c["layers"]) {
    REQUIRE(layer["rank"].size() >= 2);
    REQUIRE(layer["rank"].size() == layer["freq"].size());
    CHECK(layer["rank"][0] == 1);
    for (size_t i = 1; i < layer["rank"].size(); ++i) {
      CHECK(layer["rank"][i] > layer["rank"][i - 1]);    // ranks ascend
      CHECK(layer["freq"][i] <= layer["freq"][i - 1]);   // so frequencies fall
    }
    CHECK(layer["freq"][0].get<double>() <= 1.0);
  }
  CHECK(server.stop() == 0);
}
