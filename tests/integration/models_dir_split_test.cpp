// A models folder as downloads leave it: a model split in shards (llama.cpp's
// gguf-split layout, as large models come from Hugging Face) beside a plain
// one and a vision projector (mmproj-*.gguf), and LM Studio's layout
// (publisher/repo/FILE.gguf, with its NAME.toml beside it). The split model
// is listed once, under its name without "-00001-of-00003", with the bytes
// of all its shards, and answers exactly as the same model in one file
// served alone; the projector and the later shards are not listed; the
// nested model is named by its path and takes its own options; a shard
// removed while running makes the next load fail naming the missing file,
// and putting it back serves again. Files more than three folders down, and
// hidden folders, are not searched.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kShape = "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 4";

json greedy(const std::string& model) {
  return {{"model", model}, {"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}};
}

}  // namespace

TEST_CASE("a models folder as downloads leave it: a split model, a vision projector, LM Studio's subfolders",
          "[integration][models_dir][split]") {
  const auto dir = tc::test::scratch_dir("models_dir_split");
  const auto models = dir / "models";
  fs::create_directories(models);
  const auto whole = tc::test::make_test_model(dir, "whole", kShape);
  tc::test::make_test_model(models, "big", std::string(kShape) + " --split 3");
  REQUIRE(fs::exists(models / "big-00001-of-00003.gguf"));
  REQUIRE(fs::exists(models / "big-00003-of-00003.gguf"));
  REQUIRE_FALSE(fs::exists(models / "big.gguf"));
  tc::test::make_test_model(models, "small", "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --seed 2");
  std::ofstream(models / "mmproj-model-f16.gguf") << "GGUF a projector, not a language model";
  const auto nested = models / "lmstudio-community" / "Tiny-GGUF";
  fs::create_directories(nested);
  tc::test::make_test_model(nested, "Tiny-Q8_0", "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --seed 3");
  std::ofstream(nested / "Tiny-Q8_0.toml") << "aliases = [\"tiny\"]\n";
  fs::create_directories(models / "a" / "b" / "c" / "d");  // four folders down: not searched
  fs::copy_file(models / "small.gguf", models / "a" / "b" / "c" / "d" / "too-deep.gguf");
  fs::create_directories(models / ".cache");
  fs::copy_file(models / "small.gguf", models / ".cache" / "hidden.gguf");

  std::string want;
  {
    tc::test::ServerProcess alone(whole, {"--ctx-size", "128"}, dir);
    auto client = alone.client();
    const auto r = tc::test::post_json(client, "/v1/completions", greedy(""));
    REQUIRE(r.status == 200);
    want = r.body["choices"][0]["text"];
    CHECK(alone.stop() == 0);
  }

  tc::test::ServerProcess server({}, {"--models-dir", models.string(), "--ctx-size", "128"}, dir);
  auto client = server.client();
  const auto list = client.Get("/v1/models");
  REQUIRE(list);
  REQUIRE(list->status == 200);
  std::vector<std::string> ids;
  const json listed = json::parse(list->body);
  for (const auto& m : listed["data"]) ids.push_back(m["id"]);
  std::sort(ids.begin(), ids.end());
  CHECK(ids == std::vector<std::string>{"big", "lmstudio-community/Tiny-GGUF/Tiny-Q8_0", "small"});
  // The nested model answers under its path and under the alias its NAME.toml gives.
  for (const char* name : {"lmstudio-community/Tiny-GGUF/Tiny-Q8_0", "tiny"}) {
    INFO(name);
    const auto n = tc::test::post_json(client, "/v1/completions", greedy(name));
    CHECK(n.status == 200);
    CHECK(n.body["model"] == "lmstudio-community/Tiny-GGUF/Tiny-Q8_0");
    // GET /v1/models/ID takes the path (slashes and all) or the alias.
    const auto one = client.Get(std::string("/v1/models/") + name);
    REQUIRE(one);
    CHECK(one->status == 200);
    CHECK(json::parse(one->body)["id"] == "lmstudio-community/Tiny-GGUF/Tiny-Q8_0");
  }
  const auto missing = client.Get("/v1/models/lmstudio-community/Nope");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  const auto tags = client.Get("/api/tags");
  REQUIRE(tags);
  uint64_t shard_bytes = 0;
  for (const char* shard : {"big-00001-of-00003.gguf", "big-00002-of-00003.gguf", "big-00003-of-00003.gguf"}) {
    shard_bytes += fs::file_size(models / shard);
  }
  const json tagged = json::parse(tags->body);
  for (const auto& m : tagged["models"]) {
    if (m["name"] == "big") CHECK(m["size"].get<uint64_t>() == shard_bytes);
  }

  const auto r = tc::test::post_json(client, "/v1/completions", greedy("big"));
  REQUIRE(r.status == 200);
  CHECK(r.body["choices"][0]["text"] == want);
  CHECK(r.body["model"] == "big");

  // Unloaded, a shard gone: the next load names it; back in place, it serves again.
  const auto unload = tc::test::post_json(client, "/api/generate", {{"model", "big"}, {"keep_alive", 0}});
  REQUIRE(unload.status == 200);
  const fs::path third = models / "big-00003-of-00003.gguf";
  fs::rename(third, dir / "third.bak");
  json failed;
  for (int i = 0; i < 100; ++i) {  // until the folder's rescan sees the change and the load fails
    const auto f = tc::test::post_json(client, "/v1/completions", greedy("big"));
    if (f.status != 200) {
      failed = f.body;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  INFO(failed.dump());
  CHECK_THAT(failed.dump(), Catch::Contains("shard 3 of 3 is missing"));
  fs::rename(dir / "third.bak", third);
  std::string again;
  for (int i = 0; i < 100 && again.empty(); ++i) {
    const auto g = tc::test::post_json(client, "/v1/completions", greedy("big"));
    if (g.status == 200) again = g.body["choices"][0]["text"];
    else std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(again == want);
  CHECK(server.stop() == 0);
}
