// [cuda] `serve --models-dir` on a GPU: two generated sparse models (each
// with its profile beside it) in hybrid mode, placed by `--placement auto`
// within one --models-vram-budget. Both serve; /api/ps shows each one's
// measured device bytes, and together they stay within the budget. Loading
// and unloading both (keep_alive 0) twice leaves the GPU's free memory
// where one warm load and unload left it (cudaMemGetInfo through
// kernels::query_gpus): nothing stays behind but the CUDA context. Skipped
// where no GPU is.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/device_info.h"
#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tc::test::post_json;

constexpr int64_t kBudgetBytes = 1LL << 30;  // both models fit whole: the test is about sharing and freeing
constexpr int64_t kLeakSlack = 16LL << 20;   // allocator rounding; a model leaks far more

std::string bin() { return tc::test::thermocline_binary().string(); }

json get_json(httplib::Client& client, const std::string& path) {
  const auto r = client.Get(path);
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return json::parse(r->body);
}

// GPU 0's free bytes as the driver reports them (device-wide).
int64_t gpu_free() {
  const auto gpus = tc::kernels::query_gpus();
  REQUIRE_FALSE(gpus.devices.empty());
  return static_cast<int64_t>(gpus.devices.front().free_bytes);
}

template <class Pred>
bool eventually(Pred pred, int seconds = 20) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

// A sparse model NAME.gguf and its profile NAME.stats.gguf in `dir`.
void make_sparse_model(const fs::path& dir, const std::string& name, int seed) {
  const fs::path model = dir / (name + ".gguf");
  auto made = tc::test::run_command(bin() + " make-model --sparse -o " + model.string() +
                                    " --n-embd 256 --n-layer 2 --n-ff 1024 --n-head 4 --n-vocab 1024 --type f16"
                                    " --predictor-rank 64 -t 2 --seed " +
                                    std::to_string(seed));
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  const std::string corpus = (tc::test::source_dir() / "README.md").string();
  auto prof = tc::test::run_command(bin() + " profile -m " + model.string() + " --corpus " + corpus + " -o " +
                                    (dir / (name + ".stats.gguf")).string() + " --ctx 128 -n 1024 -t 2");
  INFO(prof.output);
  REQUIRE(prof.exit_code == 0);
}

// A greedy completion of `name` (loading it if it is not loaded).
void complete(httplib::Client& client, const std::string& name) {
  const auto r = post_json(client, "/v1/completions",
                           {{"model", name}, {"prompt", "The quick brown fox"}, {"max_tokens", 8}, {"temperature", 0}});
  INFO(r.body.dump());
  REQUIRE(r.status == 200);
  CHECK_FALSE(r.body["choices"][0]["text"].get<std::string>().empty());
}

void unload_all(httplib::Client& client) {
  for (const std::string name : {"a", "b"}) {
    CHECK(post_json(client, "/api/generate", {{"model", name}, {"keep_alive", 0}}).status == 200);
  }
  REQUIRE(eventually([&] { return get_json(client, "/api/ps")["models"].empty(); }));
}

}  // namespace

TEST_CASE("[cuda] a models folder on the GPU: two placements share one VRAM budget, unloading frees it",
          "[cuda][integration][models_dir]") {
  const auto gpus = tc::kernels::query_gpus();
  if (gpus.devices.empty()) {
    WARN("SKIPPED (no GPU here): " << gpus.status);
    return;
  }
  const auto dir = tc::test::scratch_dir("models_dir_cuda");
  const auto models = dir / "models";
  fs::create_directories(models);
  make_sparse_model(models, "a", 21);
  make_sparse_model(models, "b", 22);

  tc::test::ServerProcess server({},
                                 {"--models-dir", models.string(), "--device", "cuda", "--placement", "auto",
                                  "--models-vram-budget", std::to_string(kBudgetBytes), "--ctx-size", "128",
                                  "--parallel", "1", "--threads", "2"},
                                 dir);
  auto client = server.client();

  // A warm cycle: the server's CUDA context exists from here on.
  complete(client, "a");
  unload_all(client);
  const int64_t baseline = gpu_free();

  complete(client, "a");
  complete(client, "b");
  const json ps = get_json(client, "/api/ps");
  INFO(ps.dump());
  REQUIRE(ps["models"].size() == 2);
  int64_t vram_sum = 0, vram_min = INT64_MAX;
  for (const auto& m : ps["models"]) {
    const int64_t v = m["size_vram"].get<int64_t>();
    CHECK(v > 0);  // hybrid mode: each placement put its hot neurons and fixed tensors on the GPU
    vram_sum += v;
    vram_min = std::min(vram_min, v);
  }
  CHECK(vram_sum <= kBudgetBytes);
  WARN("size_vram of the two models: " << vram_sum << " bytes together, the smaller " << vram_min);
  CHECK_THAT(server.log(), Catch::Contains("hybrid"));

  unload_all(client);
  const int64_t after_first = gpu_free();
  complete(client, "b");
  complete(client, "a");
  unload_all(client);
  const int64_t after_second = gpu_free();
  WARN("GPU free bytes: baseline " << baseline << ", after unloading both " << after_first << ", again "
                                   << after_second);
  // Back to the baseline: less than one model's bytes stayed (the
  // allocator's rounding), and a second cycle leaves no more.
  CHECK(after_first >= baseline - std::min(kLeakSlack, vram_min));
  CHECK(after_second >= after_first - kLeakSlack);
  CHECK(server.stop() == 0);
}
