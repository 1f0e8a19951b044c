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
#include "tests/engine/model/device_test_steps.h"
#include "tests/engine/model/host_device_backend.h"
#include "tests/test_util.h"

using tc::model::LlamaModel;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::runtime::KvCache;
using tc::text::TokenId;

namespace {

constexpr int kDecodeSteps = 5;

std::vector<float> run_steps(LlamaModel& m, tc::kernels::Backend& backend) {
  // The 14-token prompt step is more than a GEMV takes: eager.
  return tc::test::run_two_sequences(m, backend, kDecodeSteps, true);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("step graphs: decode steps run as graphs with the eager path's logits", "[model][device][graphs]") {
  for (const char* type : {"f16", "q4_0"}) {
    INFO(type);
    const auto loaded = tc::test::small_device_model(std::string("graphs_") + type, type);
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
  const auto loaded = tc::test::small_device_model("graphs_f16", "f16");
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
  const auto loaded = tc::test::small_device_model("graphs_f16", "f16");
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
