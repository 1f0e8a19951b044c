// `serve --models-dir` end to end: three generated models and a corrupt
// file in a folder, --max-loaded-models 2, 200 requests from 8 clients
// choosing models at random. Every reply must equal the greedy text of its
// model served alone (--model), no request may be lost, the RSS stays within
// two models' measured footprint and returns to the baseline once every
// model is unloaded (keep_alive 0), loads and unloads are counted in
// /metrics; then a file is added and one removed while running, the
// corrupt file is fixed and served, and a stream waits for its model's load.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tc::test::post_json;

const std::vector<std::string> kPrompts = {"In the beginning", "The quick brown fox", "Once upon a time there was",
                                           "And the earth was"};
constexpr int kMaxTokens = 8;
constexpr int64_t kCtx = 256;
constexpr int kParallel = 2;

json completion_body(const std::string& model, const std::string& prompt) {
  return {{"model", model}, {"prompt", prompt}, {"max_tokens", kMaxTokens}, {"temperature", 0}};
}

// The greedy completions of every prompt by `model` served alone.
std::vector<std::string> reference_texts(const fs::path& model, const fs::path& log_dir) {
  tc::test::ServerProcess server(model,
                                 {"--ctx-size", std::to_string(kCtx), "--parallel", std::to_string(kParallel),
                                  "--threads", "1"},
                                 log_dir);
  auto client = server.client();
  std::vector<std::string> out;
  for (const auto& p : kPrompts) {
    const auto r = post_json(client, "/v1/completions", completion_body("", p));
    REQUIRE(r.status == 200);
    out.push_back(r.body["choices"][0]["text"].get<std::string>());
  }
  CHECK(server.stop() == 0);
  return out;
}

json get_json(httplib::Client& client, const std::string& path) {
  auto r = client.Get(path);
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return json::parse(r->body);
}

std::map<std::string, std::string> model_states(httplib::Client& client) {
  std::map<std::string, std::string> out;
  const json list = get_json(client, "/v1/models");
  for (const auto& m : list["data"]) {
    out[m["id"].get<std::string>()] = m["status"]["value"].get<std::string>();
  }
  return out;
}

// Sum of a metric's series whose labels contain `labels`.
double metric_sum(const std::string& text, const std::string& name, const std::string& labels = "") {
  double sum = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) != 0 || line.find(labels) == std::string::npos) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

template <class Pred>
bool eventually(Pred pred, int seconds = 10) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

}  // namespace

TEST_CASE("a models folder: three models, two loaded at most, 200 requests from 8 clients",
          "[integration][models_dir]") {
  const auto dir = tc::test::scratch_dir("models_dir");
  const auto models = dir / "models";
  fs::create_directories(models);
  // Big enough that a third loaded model would show in the RSS (about 38 MB each).
  const std::string shape = "--n-embd 384 --n-layer 4 --n-ff 1536 --n-head 6 --n-head-kv 3 --n-vocab 2048";
  std::map<std::string, fs::path> files;
  for (const auto& [name, seed] : {std::pair{"a", 11}, std::pair{"b", 12}, std::pair{"c", 13}}) {
    files[name] = tc::test::make_test_model(models, name, shape + " --seed " + std::to_string(seed));
  }
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& [name, path] : files) expected[name] = reference_texts(path, dir);
  // The three models differ (else the test could not tell them apart).
  REQUIRE(expected["a"] != expected["b"]);
  REQUIRE(expected["b"] != expected["c"]);
  expected["alpha"] = expected["a"];
  std::ofstream(models / "a.toml") << "aliases = [\"alpha\"]\n";
  std::ofstream(models / "broken.gguf") << "GGUF\x03\x00\x00\x00 truncated";

  tc::test::ServerProcess server({},
                                 {"--models-dir", models.string(), "--max-loaded-models", "2", "--ctx-size",
                                  std::to_string(kCtx), "--parallel", std::to_string(kParallel), "--threads", "1",
                                  "--sse-ping-s", "0.05"},
                                 dir);
  auto client = server.client();
  const long baseline_rss = server.rss_bytes();

  auto states = model_states(client);
  CHECK(states == std::map<std::string, std::string>{
                      {"a", "unloaded"}, {"b", "unloaded"}, {"c", "unloaded"}, {"broken", "unloaded"}});

  {  // bad input: errors naming the model and the file, never a crash
    auto r = post_json(client, "/v1/completions", completion_body("nope", "x"));
    CHECK(r.status == 404);
    CHECK(r.body["error"]["code"] == "model_not_found");
    CHECK(r.body["error"]["message"].get<std::string>().find("a, b, broken, c") != std::string::npos);
    r = post_json(client, "/v1/chat/completions",
                  {{"model", "broken"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}});
    CHECK(r.status == 500);
    CHECK(r.body["error"]["code"] == "model_load_failed");
    const std::string message = r.body["error"]["message"].get<std::string>();
    CHECK(message.find("broken.gguf") != std::string::npos);
    r = post_json(client, "/v1/completions", {{"prompt", "x"}});
    CHECK(r.status == 400);  // several models: one must be named
    r = post_json(client, "/v1/completions", {{"model", "a"}, {"prompt", "x"}, {"keep_alive", "a while"}});
    CHECK(r.status == 400);
    CHECK(r.body["error"]["param"] == "keep_alive");
    CHECK(model_states(client)["broken"] == "failed");
    auto health = client.Get("/health");
    REQUIRE(health);
    CHECK(health->status == 200);  // the good models can still be served
  }

  // What one loaded model takes, measured: the RSS with a alone loaded.
  REQUIRE(post_json(client, "/v1/completions", completion_body("a", kPrompts[0])).status == 200);
  const long footprint = server.rss_bytes() - baseline_rss;
  // At least its mapped file (the weights are read at every token).
  CHECK(footprint >= static_cast<long>(fs::file_size(files["a"])));

  // 8 clients, 200 requests, random models; the RSS sampled meanwhile.
  std::atomic<long> max_rss{0};
  std::atomic<bool> sampling{true};
  std::thread sampler([&] {
    while (sampling.load()) {
      max_rss.store(std::max(max_rss.load(), server.rss_bytes()));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::atomic<int> next{0}, ok{0};
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> clients;
  const std::vector<std::string> names = {"a", "b", "c", "alpha"};
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&, t] {
      std::mt19937 rng(1000 + t);
      auto c = server.client();
      for (int i = next.fetch_add(1); i < 200; i = next.fetch_add(1)) {
        const std::string model = names[rng() % names.size()];
        const size_t p = rng() % kPrompts.size();
        const bool stream = rng() % 4 == 0;
        json body = completion_body(model, kPrompts[p]);
        std::string text, problem;
        if (stream) {
          body["stream"] = true;
          const auto r = tc::test::post_stream(c, "/v1/completions", body);
          if (r.status != 200 || r.data.empty() || r.data.back() != "[DONE]") {
            problem = "stream status " + std::to_string(r.status) + " " + r.error + " " + r.raw.substr(0, 300);
          }
          for (const auto& ev : r.events) {
            if (ev.contains("error")) problem = ev.dump();
            if (ev.contains("choices") && !ev["choices"].empty()) text += ev["choices"][0].value("text", "");
          }
        } else {
          const auto r = post_json(c, "/v1/completions", body);
          if (r.status != 200) {
            problem = "status " + std::to_string(r.status) + " " + r.error + " " + r.raw.substr(0, 300);
          } else {
            text = r.body["choices"][0]["text"].get<std::string>();
          }
        }
        if (problem.empty() && text != expected[model][p]) {
          problem = "text \"" + text + "\" != served alone \"" + expected[model][p] + "\"";
        }
        if (problem.empty()) {
          ++ok;
        } else {
          std::lock_guard lock(failures_mutex);
          failures.push_back("request " + std::to_string(i) + " (" + model + ", prompt " + std::to_string(p) +
                             (stream ? ", streamed" : "") + "): " + problem);
        }
      }
    });
  }
  for (auto& c : clients) c.join();
  sampling.store(false);
  sampler.join();
  INFO((failures.empty() ? std::string() : failures.front()));
  CHECK(failures.size() == 0);
  CHECK(ok.load() == 200);
  INFO("baseline RSS " << baseline_rss << ", max " << max_rss.load() << ", one model " << footprint);
  // Two models' worth (a third would add another footprint, about 38 MB).
  CHECK(max_rss.load() <= baseline_rss + 2 * footprint + (16L << 20));

  const std::string metrics = client.Get("/metrics")->body;
  INFO(metrics);
  CHECK(metric_sum(metrics, "thermocline_model_loads_total") >= 3);
  CHECK(metric_sum(metrics, "thermocline_model_loads_total", "model=\"a\"") >= 1);
  CHECK(metric_sum(metrics, "thermocline_model_unloads_total", "reason=\"evicted\"") >= 1);
  CHECK(metric_sum(metrics, "thermocline_model_requests_total", "status=\"200\"") >= 200);
  CHECK(metric_sum(metrics, "thermocline_model_load_failures_total", "model=\"broken\"") == 1);
  int n_loaded = 0;
  for (const auto& [name, state] : model_states(client)) n_loaded += state == "loaded";
  CHECK(n_loaded <= 2);
  CHECK(server.log().find("model=\"b\"") != std::string::npos);  // request lines name their model

  // A file added and one removed while running.
  fs::copy_file(files["b"], models / "d.gguf");
  CHECK(eventually([&] { return model_states(client).count("d") == 1; }));
  auto r = post_json(client, "/v1/completions", completion_body("d", kPrompts[0]));
  CHECK(r.status == 200);
  CHECK(r.body["choices"][0]["text"] == expected["b"][0]);
  fs::remove(files["c"]);
  CHECK(eventually([&] { return model_states(client).count("c") == 0; }));
  r = post_json(client, "/v1/completions", completion_body("c", kPrompts[0]));
  CHECK(r.status == 404);

  // The corrupt file replaced by a good one: loaded again, served.
  fs::copy_file(files["a"], models / "broken.gguf", fs::copy_options::overwrite_existing);
  CHECK(eventually([&] { return model_states(client)["broken"] != "failed"; }));
  r = post_json(client, "/v1/completions", completion_body("broken", kPrompts[1]));
  CHECK(r.status == 200);
  CHECK(r.body["choices"][0]["text"] == expected["a"][1]);

  // keep_alive 0 unloads everything: the RSS returns to the baseline.
  for (const auto& [name, state] : model_states(client)) {
    r = post_json(client, "/api/generate", {{"model", name}, {"keep_alive", 0}});
    CHECK(r.status == 200);
  }
  CHECK(eventually([&] { return get_json(client, "/api/ps")["models"].empty(); }));
  CHECK(eventually([&] { return server.rss_bytes() <= baseline_rss + (24L << 20); }));
  INFO("RSS after unloading all: " << server.rss_bytes() << ", baseline " << baseline_rss);
  CHECK(server.rss_bytes() <= baseline_rss + (24L << 20));

  // A stream whose model is not loaded: 200 at once, then the text.
  auto stream_body = completion_body("a", kPrompts[2]);
  stream_body["stream"] = true;
  const auto s = tc::test::post_stream(client, "/v1/completions", stream_body);
  CHECK(s.status == 200);
  std::string text;
  for (const auto& ev : s.events) {
    if (ev.contains("choices") && !ev["choices"].empty()) text += ev["choices"][0].value("text", "");
  }
  CHECK(text == expected["a"][2]);
  REQUIRE_FALSE(s.data.empty());
  CHECK(s.data.back() == "[DONE]");

  const std::string m2 = client.Get("/metrics")->body;
  CHECK(metric_sum(m2, "thermocline_model_unloads_total", "reason=\"requested\"") +
            metric_sum(m2, "thermocline_model_unloads_total", "reason=\"keep_alive\"") >=
        1);
  CHECK(server.stop() == 0);
}
