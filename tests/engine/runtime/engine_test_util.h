// Helpers of the Engine tests: a small generated model (q8_0 unless asked),
// engine options, requests on seeded random prompts, and collecting a
// request's events.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/model/loaded_model.h"
#include "engine/runtime/engine.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"

namespace engine_test {

using namespace std::chrono_literals;
using tc::runtime::Clock;
using tc::runtime::Engine;
using tc::runtime::EngineOptions;
using tc::runtime::FinishReason;
using tc::runtime::GenerationRequest;
using tc::runtime::RequestHandle;
using tc::runtime::StreamEvent;
using tc::runtime::SubmitStatus;
using tc::runtime::TokenInfo;
using tc::text::TokenId;

constexpr int64_t kCtxTrain = 1024;
constexpr int32_t kVocab = 512;

inline std::filesystem::path make_test_model(const std::string& weight_type) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("engine_model_" + weight_type) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 160;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = kCtxTrain;
  o.weight_type = weight_type;
  if (weight_type == "q4_k_m") {  // k-quants need rows of 256
    o.n_embd = 256;
    o.n_ff = 512;
    o.n_head = 8;
    o.n_head_kv = 4;
  }
  o.seed = 23;
  o.n_threads = 2;
  tc::profiler::make_model(o);
  return o.output;
}

inline const std::filesystem::path& model_path() {
  static const std::filesystem::path path = make_test_model("q8_0");
  return path;
}

// The q8_0 model most tests use, or one of another weight type.
inline std::shared_ptr<const tc::model::LoadedModel> test_model(const std::string& weight_type = "q8_0") {
  static std::map<std::string, std::shared_ptr<const tc::model::LoadedModel>> models;
  auto& model = models[weight_type];
  if (!model) model = tc::model::load_model(weight_type == "q8_0" ? model_path() : make_test_model(weight_type));
  return model;
}

inline EngineOptions options(int n_parallel, int64_t n_batch = 512, int queue_size = 64) {
  EngineOptions o;
  o.n_parallel = n_parallel;
  o.n_ctx = kCtxTrain;
  o.n_batch = n_batch;
  o.queue_size = queue_size;
  o.model.threads = 1;
  return o;
}

// BOS, then seeded random ids.
inline std::vector<TokenId> random_prompt(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<TokenId> out = {1};
  while (out.size() < n) out.push_back(static_cast<TokenId>(3 + rng() % (kVocab - 3)));
  return out;
}

inline GenerationRequest request(std::vector<TokenId> prompt, int32_t max_tokens, float temperature = 0.0f,
                          uint64_t seed = 0) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = temperature;
  r.sampling.seed = seed;
  r.ignore_eos = true;
  r.return_tokens = true;
  return r;
}

inline std::shared_ptr<RequestHandle> submit(Engine& engine, GenerationRequest r) {
  auto result = engine.submit(std::move(r));
  INFO(result.message);
  REQUIRE(result.status == SubmitStatus::Ok);
  REQUIRE(result.handle);
  return result.handle;
}

struct Outcome {
  std::string text;              // every event's text, concatenated
  std::vector<TokenId> tokens;   // every event's tokens
  std::vector<TokenInfo> infos;
  StreamEvent last;              // Finished or Error
  int n_events = 0;
};

inline Outcome collect(RequestHandle& handle, std::chrono::seconds limit = 60s) {
  Outcome o;
  const auto end = Clock::now() + limit;
  for (;;) {
    REQUIRE(Clock::now() < end);
    StreamEvent ev;
    if (!handle.next(ev, 100ms)) continue;
    ++o.n_events;
    o.text += ev.text;
    for (auto& t : ev.tokens) {
      o.tokens.push_back(t.id);
      o.infos.push_back(std::move(t));
    }
    if (ev.kind != StreamEvent::Kind::Text) {
      o.last = std::move(ev);
      return o;
    }
    CHECK((!ev.text.empty() || !o.infos.empty()));
  }
}

// Runs one request on a fresh engine with nothing beside it.
inline Outcome alone(const GenerationRequest& r, int64_t n_batch = 512,
              std::shared_ptr<const tc::model::LoadedModel> model = test_model()) {
  Engine engine(std::move(model), options(1, n_batch));
  return collect(*submit(engine, r));
}

inline bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 20000ms) {
  const auto end = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

inline void check_finished(const Outcome& o, FinishReason reason) {
  INFO("error: " << o.last.error);
  REQUIRE(o.last.kind == StreamEvent::Kind::Finished);
  CHECK(tc::runtime::finish_reason_name(o.last.finish) == std::string(tc::runtime::finish_reason_name(reason)));
}


}  // namespace engine_test
