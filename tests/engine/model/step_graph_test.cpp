// Step graphs (Backend::begin_graph) driven by the forward pass, on
// HostDeviceBackend recording them as a GPU with CUDA graphs does: decode
// steps run as graphs with the eager path's logits bit for bit (a step that
// read what its ops write before the graph ran, or waited for the device
// inside it, would not); prompts and the steps a graph cannot hold run
// eagerly; a graph the driver refuses is issued again op by op.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/model/host_device_backend.h"
#include "tests/test_util.h"

using tc::model::LlamaModel;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::runtime::KvCache;
using tc::text::TokenId;

namespace {

constexpr int64_t kVocab = 512;
constexpr int kDecodeSteps = 5;

std::unique_ptr<tc::model::LoadedModel> small_model(const std::string& type) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("step_graph_" + type) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 192;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 128;
  o.weight_type = type;
  o.seed = 9;
  o.n_threads = 2;
  tc::profiler::make_model(o);
  return tc::model::load_model(o.output);
}

// Two prompts prefilled in one step (12 tokens: more than a GEMV takes, so
// eager), then kDecodeSteps steps decoding both, then one step decoding the
// first alone (another shape): every step's logits, concatenated.
std::vector<float> run_steps(LlamaModel& m, tc::kernels::Backend& backend) {
  KvCache kv(backend, m.spec(), 2, 64);
  const auto a = tc::test::random_tokens(7, 1, kVocab);
  const auto b = tc::test::random_tokens(5, 2, kVocab);
  std::vector<float> all, logits;
  const StepSequence prefill[] = {{0, a, true}, {1, b, false}};
  REQUIRE(m.forward(prefill, kv, logits) == StepStatus::Ok);
  all.insert(all.end(), logits.begin(), logits.end());
  for (int step = 0; step < kDecodeSteps; ++step) {
    const TokenId next_a = (13 * step + 3) % kVocab, next_b = (17 * step + 5) % kVocab;
    const StepSequence decode[] = {{0, std::span(&next_a, 1), false, true}, {1, std::span(&next_b, 1), false, true}};
    REQUIRE(m.forward(decode, kv, logits) == StepStatus::Ok);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  const TokenId last = 42;
  const StepSequence alone[] = {{0, std::span(&last, 1), false, true}};
  REQUIRE(m.forward(alone, kv, logits) == StepStatus::Ok);
  all.insert(all.end(), logits.begin(), logits.end());
  return all;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("step graphs: decode steps run as graphs with the eager path's logits", "[model][device][graphs]") {
  for (const char* type : {"f16", "q4_0"}) {
    INFO(type);
    const auto loaded = small_model(type);
    tc::test::HostDeviceBackend eager(2);
    LlamaModel on_eager(*loaded, eager);
    tc::test::HostDeviceBackend graphs(2);
    graphs.record_graphs = true;
    LlamaModel on_graphs(*loaded, graphs);

    const auto want = run_steps(on_eager, eager);
    const auto got = run_steps(on_graphs, graphs);
    CHECK(same_bits(got, want));
    // Every decode step was a graph, the prompt step was not; the two
    // shapes (two sequences, one) had keys of their own.
    CHECK(graphs.graphs_run == kDecodeSteps + 1);
    CHECK(graphs.graphs_failed == 0);
    CHECK(eager.graphs_run == 0);
    REQUIRE(graphs.graph_keys.size() == static_cast<size_t>(kDecodeSteps + 1));
    CHECK(graphs.graph_keys.front() == graphs.graph_keys[kDecodeSteps - 1]);
    CHECK(graphs.graph_keys.back() != graphs.graph_keys.front());
    // The same bytes crossed the bus.
    CHECK(graphs.to_device_bytes == eager.to_device_bytes);
    CHECK(graphs.to_host_bytes == eager.to_host_bytes);
  }
}

TEST_CASE("step graphs: a graph the driver refuses is issued again op by op, and graphs stay off",
          "[model][device][graphs]") {
  const auto loaded = small_model("f16");
  tc::test::HostDeviceBackend eager(2);
  LlamaModel on_eager(*loaded, eager);
  tc::test::HostDeviceBackend graphs(2);
  graphs.record_graphs = true;
  graphs.fail_next_graph = true;
  LlamaModel on_graphs(*loaded, graphs);

  CHECK(same_bits(run_steps(on_graphs, graphs), run_steps(on_eager, eager)));
  CHECK(graphs.graphs_failed == 1);
  CHECK(graphs.graphs_run == 0);
  CHECK(graphs.graph_keys.size() == 1);  // no recording tried after the failure
}

TEST_CASE("step graphs: the CPU backend and the steps that wait inside run eagerly", "[model][device][graphs]") {
  const auto loaded = small_model("f16");
  auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  CHECK_FALSE(cpu->begin_graph(1));
  CHECK(cpu->graph_summary().empty());

  // Layer offload waits for the device between its two sides: no graph.
  tc::test::HostDeviceBackend graphs(2);
  graphs.record_graphs = true;
  LlamaModel offload(*loaded, graphs, {}, {}, {.cpu = cpu.get(), .n_device_layers = 1});
  KvCache kv = offload.make_kv_cache(1, 32);
  std::vector<float> logits;
  const TokenId t = 7;
  const StepSequence one[] = {{0, std::span(&t, 1), false, true}};
  REQUIRE(offload.forward(one, kv, logits) == StepStatus::Ok);
  CHECK(graphs.graph_keys.empty());
}
