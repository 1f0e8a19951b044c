// Hybrid mode (hot FFN neurons on the device, cold ones on the CPU) on
// HostDeviceBackend, a "GPU" in host memory that counts the bytes crossing
// its bus, against the CPU-only sparse FFN on planted sparse models: one
// layer's FFN output on random inputs, whole-model logits and greedy tokens
// for placements with every, no, and a solver-chosen part of the neurons
// hot, and what crosses the bus per decode step.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine/model/hybrid_ffn_block.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/model/sparse_ffn_block.h"
#include "kernels/backend.h"
#include "tests/engine/model/host_device_backend.h"
#include "tests/engine/model/hybrid_fixtures.h"
#include "tests/engine/model/reference_forward.h"
#include "tests/test_util.h"

using tc::model::FfnMode;
using tc::model::HybridOptions;
using tc::model::LlamaModel;
using tc::model::NeuronPlacement;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::runtime::KvCache;
using tc::text::TokenId;

namespace {

using tc::test::all_hot;
using tc::test::greedy;
using tc::test::max_abs;
using tc::test::none_hot;
using tc::test::planted_model;
using tc::test::solver_placement;
constexpr int64_t kVocab = tc::test::kHybridVocab;

// Half of each layer's neurons, every other one (for the block test).
NeuronPlacement alternate_hot(const tc::model::ModelSpec& spec) { return tc::test::strided_hot(spec, 1, 2); }

// Two sequences decoded together (each step: one token of each), after a
// short prompt each: every step's logits.
std::vector<float> decode_pair(LlamaModel& m, tc::kernels::Backend& backend) {
  KvCache kv(backend, m.spec(), 2, 64);
  const auto a = tc::test::random_tokens(10, 41, kVocab);
  const auto b = tc::test::random_tokens(10, 42, kVocab);
  std::vector<float> all, logits;
  const StepSequence prompts[] = {{0, std::span(a).first(4), false}, {1, std::span(b).first(3), false}};
  REQUIRE(m.forward(prompts, kv, logits) == StepStatus::Ok);
  all.insert(all.end(), logits.begin(), logits.end());
  for (size_t i = 4; i < a.size(); ++i) {
    const StepSequence seqs[] = {{0, std::span(a).subspan(i, 1), false, true},
                                 {1, std::span(b).subspan(i, 1), false, true}};
    REQUIRE(m.forward(seqs, kv, logits) == StepStatus::Ok);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

}  // namespace

TEST_CASE("the hybrid FFN of one layer equals the CPU sparse FFN on random inputs", "[model][hybrid]") {
  const auto loaded = planted_model("block", true, "f32");
  const auto& spec = loaded->spec;
  const auto host = tc::model::map_llama_weights(loaded->file, spec);
  auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  tc::model::SparseFfnBlock reference(spec, *cpu, loaded->predictors.layers, tc::kernels::Activation::ReGLU);

  struct Case {
    const char* name;
    NeuronPlacement placement;
    bool exact;  // every neuron on one side: the same summation order as the CPU
  };
  const Case cases[] = {{"all hot", all_hot(spec), true},
                        {"none hot", none_hot(spec), true},
                        {"alternate", alternate_hot(spec), false}};
  for (const auto& c : cases) {
    for (int64_t n_tokens : {1, 3}) {
      INFO(c.name << ", " << n_tokens << " tokens");
      tc::test::HostDeviceBackend device(2);
      const auto split = tc::model::split_hybrid_weights(host.layers, c.placement, device);
      tc::model::HybridFfnBlock hybrid(spec, device, *cpu, loaded->predictors, split, tc::kernels::Activation::ReGLU);
      for (int64_t layer = 0; layer < spec.n_layer; ++layer) {
        const auto n = static_cast<size_t>(n_tokens * spec.n_embd);
        const auto x = tc::test::random_floats(n, 100 + static_cast<uint64_t>(layer * 10 + n_tokens), 1.0f);
        const auto cur = tc::test::random_floats(n, 200 + static_cast<uint64_t>(layer * 10 + n_tokens), 1.0f);
        std::vector<float> want(n, std::numeric_limits<float>::quiet_NaN());
        std::vector<float> got(n, std::numeric_limits<float>::quiet_NaN());
        reference.run(layer, host.layers[static_cast<size_t>(layer)], x.data(), cur.data(), n_tokens, want.data());
        hybrid.run(layer, x.data(), cur.data(), n_tokens, true, got.data());
        const double scale = max_abs(want);
        REQUIRE(scale > 0);
        if (c.exact) {
          CHECK(std::memcmp(got.data(), want.data(), n * sizeof(float)) == 0);
        } else {
          double worst = 0;
          for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
          CHECK(worst <= 1e-6 * scale);
        }
      }
      // Both sides really worked, and the predictor did not keep everything.
      const auto& split_counts = hybrid.split_counters();
      const int64_t hot = split_counts.hot[0] + split_counts.hot[1];
      const int64_t cold = split_counts.cold[0] + split_counts.cold[1];
      CHECK((hot > 0) == !c.placement.hot[0].empty());
      CHECK((cold > 0) == (c.placement.hot[0].size() < static_cast<size_t>(spec.n_ff)));
      CHECK(hot + cold < spec.n_layer * spec.n_ff);
      CHECK(hybrid.counters().predicted[0] == hybrid.split_counters().hot[0] + hybrid.split_counters().cold[0]);
    }
  }
}

TEST_CASE("hybrid logits equal the CPU sparse logits bit for bit when one side holds every neuron",
          "[model][hybrid]") {
  // Prompts of up to 8 tokens run sparse too, so every FFN step is sparse
  // and, with all neurons on one side, summed in the CPU's order.
  const tc::model::ForwardOptions options{.ffn_mode = FfnMode::Sparse, .sparse_max_tokens = 8};
  for (bool pwri : {false, true}) {
    INFO((pwri ? "pwri" : "gguf"));
    const auto loaded = planted_model(pwri ? "bits_pwri" : "bits_gguf", pwri, "f16");
    auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
    LlamaModel on_cpu(*loaded, *cpu, options);
    const auto want = decode_pair(on_cpu, *cpu);
    for (bool hot : {true, false}) {
      INFO((hot ? "all hot" : "none hot"));
      tc::test::HostDeviceBackend device(2);
      LlamaModel hybrid(*loaded, device, options,
                        HybridOptions{cpu.get(), hot ? all_hot(loaded->spec) : none_hot(loaded->spec), {}});
      const auto got = decode_pair(hybrid, device);
      REQUIRE(got.size() == want.size());
      CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
      CHECK(hybrid.sparse_counters()->sparse_steps == 7);
      CHECK(hybrid.sparse_counters()->dense_steps == 0);
    }
  }
}

TEST_CASE("hybrid greedy tokens equal CPU-only sparse greedy tokens", "[model][hybrid]") {
  // A 12-token prompt (sparse: under the crossover of 16, so several tokens
  // share a step and each keeps its own predicted neurons), then 16 greedy
  // decode steps.
  const tc::model::ForwardOptions options{.ffn_mode = FfnMode::Sparse, .sparse_max_tokens = 16};
  for (const char* type : {"f16", "q8_0"}) {
    for (bool pwri : {false, true}) {
      INFO(type << (pwri ? " pwri" : " gguf"));
      const std::string name = std::string("greedy_") + type + (pwri ? "_pwri" : "_gguf");
      const auto loaded = planted_model(name, pwri, type);
      const auto& spec = loaded->spec;
      auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
      LlamaModel on_cpu(*loaded, *cpu, options);
      const auto prompt = tc::test::random_tokens(12, 51, kVocab);
      const auto want = greedy(on_cpu, *cpu, prompt, 16);
      struct Placement {
        const char* name;
        NeuronPlacement placement;
        bool exact;  // every neuron on one side: the CPU's summation order
      };
      const Placement placements[] = {{"all hot", all_hot(spec), true},
                                      {"none hot", none_hot(spec), true},
                                      {"solver", solver_placement(*loaded, name), false}};
      // A split sum differs from the CPU's in the last bits; q8_0 quantizes
      // each matmul's activations to int8, where such a difference can flip
      // a rounding (1/254 of a block's range) and grow over the steps.
      const double tolerance = std::string(type) == "q8_0" ? 1e-2 : 1e-5;
      for (const auto& p : placements) {
        INFO(p.name);
        tc::test::HostDeviceBackend device(2);
        LlamaModel hybrid(*loaded, device, options, HybridOptions{cpu.get(), p.placement, {}});
        const auto got = greedy(hybrid, device, prompt, 16);
        CHECK(got.tokens == want.tokens);
        std::vector<double> ref(want.logits.begin(), want.logits.end());
        REQUIRE(got.logits.size() == want.logits.size());
        CHECK(tc::test::relative_error(got.logits.data(), ref) < tolerance);
        if (p.exact) CHECK(std::memcmp(got.logits.data(), want.logits.data(), want.logits.size() * sizeof(float)) == 0);
        const auto& c = *hybrid.sparse_counters();
        CHECK(c.sparse_steps == 17);
        CHECK(c.dense_steps == 0);
        const auto& split = *hybrid.hybrid_counters();
        for (int64_t l = 0; l < spec.n_layer; ++l) {
          const auto i = static_cast<size_t>(l);
          CHECK(c.token_layers[i] == 12 + 16);
          CHECK(c.predicted[i] == split.hot[i] + split.cold[i]);
          CHECK((split.hot[i] > 0) == !p.placement.hot[i].empty());
          CHECK((split.cold[i] > 0) == (p.placement.hot[i].size() < static_cast<size_t>(spec.n_ff)));
        }
      }
    }
  }
}

TEST_CASE("a dense prompt step in hybrid mode computes every neuron, split between the sides or streamed",
          "[model][hybrid]") {
  // f32 weights: the dense CPU pass differs from the hybrid one only in the
  // order of its sums. A step that dropped the cold (or hot) neurons would
  // be far off.
  const auto loaded = planted_model("dense_prompt", false, "f32");
  const auto& spec = loaded->spec;
  auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel dense(*loaded, *cpu);
  // 20 tokens: the hot neurons on the device, the cold ones on the CPU;
  // kStreamMinTokens and more: every row streamed to the device.
  for (const int64_t n : {int64_t{20}, tc::model::kStreamMinTokens + 8}) {
    INFO(n << " tokens");
    const auto prompt = tc::test::random_tokens(static_cast<size_t>(n), 71, kVocab);
    std::vector<float> want, got;
    {
      KvCache kv(*cpu, dense.spec(), 1, 64);
      const StepSequence seq{0, prompt, true};
      REQUIRE(dense.forward({&seq, 1}, kv, want) == StepStatus::Ok);
    }
    tc::test::HostDeviceBackend device(2);
    const auto placement = solver_placement(*loaded, "dense_prompt");
    LlamaModel hybrid(*loaded, device, {.ffn_mode = FfnMode::Sparse}, HybridOptions{cpu.get(), placement, {}});
    KvCache kv(device, hybrid.spec(), 1, 64);
    const StepSequence seq{0, prompt, true};
    REQUIRE(hybrid.forward({&seq, 1}, kv, got) == StepStatus::Ok);
    REQUIRE(got.size() == want.size());
    std::vector<double> ref(want.begin(), want.end());
    CHECK(tc::test::relative_error(got.data(), ref) < 1e-5);
    CHECK(hybrid.sparse_counters()->dense_steps == 1);
    CHECK(hybrid.sparse_counters()->sparse_steps == 0);
    const bool streamed = n >= tc::model::kStreamMinTokens;
    // Split: every neuron on one side or the other. Streamed: the CPU did
    // nothing, and every FFN row of every layer crossed once.
    const auto& split = *hybrid.hybrid_counters();
    for (int64_t l = 0; l < spec.n_layer; ++l) {
      const auto i = static_cast<size_t>(l);
      CHECK(split.dense_device[i] + split.dense_cold[i] == (streamed ? 0 : spec.n_ff));
      CHECK(split.dense_device[i] == (streamed ? 0 : static_cast<int64_t>(placement.hot[i].size())));
      CHECK(split.hot[i] + split.cached[i] + split.cold[i] == 0);  // the sparse steps' split: none ran
    }
    const size_t ffn_bytes = static_cast<size_t>(spec.n_layer * 3 * spec.n_ff * spec.n_embd) * sizeof(float);
    CHECK(device.prefetch_bytes.load() == (streamed ? ffn_bytes : 0));
  }
}

TEST_CASE("hybrid decode moves activations, active sets and partial sums, never weights", "[model][hybrid]") {
  const auto loaded = planted_model("bus", true, "f16");
  const auto& spec = loaded->spec;
  auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  const auto placement = solver_placement(*loaded, "bus");
  tc::test::HostDeviceBackend device(2);
  LlamaModel hybrid(*loaded, device, {.ffn_mode = FfnMode::Sparse}, HybridOptions{cpu.get(), placement, {}});

  // Uploaded once: everything but the FFN matrices, plus the hot rows and the predictors.
  size_t expected_upload = 0;
  for (const auto& t : loaded->file.tensors()) {
    const std::string name(t.name);
    const bool ffn = name.find("ffn_gate.") != std::string::npos || name.find("ffn_up.") != std::string::npos ||
                     name.find("ffn_down_t.") != std::string::npos;
    if (!ffn) expected_upload += loaded->file.tensor_data(t).size();  // fc1/fc2 included
  }
  int64_t n_hot_total = 0;
  for (const auto& layer : placement.hot) n_hot_total += static_cast<int64_t>(layer.size());
  const size_t neuron_bytes = 3 * tc::kernels::row_bytes(tc::kernels::DType::F16, spec.n_embd);
  expected_upload += static_cast<size_t>(n_hot_total) * neuron_bytes;
  CHECK(device.uploaded_bytes == expected_upload);
  const int uploads_after_load = device.uploads;

  KvCache kv(device, spec, 1, 64);
  std::vector<float> logits;
  const auto prompt = tc::test::random_tokens(6, 61, kVocab);
  const StepSequence first{0, prompt, false};
  REQUIRE(hybrid.forward({&first, 1}, kv, logits) == StepStatus::Ok);
  const size_t n_words = static_cast<size_t>((spec.n_ff + 31) / 32);
  const size_t embd_bytes = static_cast<size_t>(spec.n_embd) * sizeof(float);
  for (int step = 0; step < 8; ++step) {
    const TokenId next = static_cast<TokenId>((13 * step + 5) % kVocab);
    const auto hot_before = hybrid.hybrid_counters()->hot;
    const size_t to_device = device.to_device_bytes, to_host = device.to_host_bytes;
    const StepSequence seq{0, std::span(&next, 1), false, true};
    REQUIRE(hybrid.forward({&seq, 1}, kv, logits) == StepStatus::Ok);
    // Out: per layer the bitmask and ffn_norm(x); then the logits.
    CHECK(device.to_host_bytes - to_host ==
          static_cast<size_t>(spec.n_layer) * (n_words * sizeof(uint32_t) + embd_bytes) + kVocab * sizeof(float));
    // In: the token id and position; per layer the hot positions and at most one partial sum.
    size_t hot_positions = 0;
    for (size_t l = 0; l < hot_before.size(); ++l) {
      hot_positions += static_cast<size_t>(hybrid.hybrid_counters()->hot[l] - hot_before[l]) * sizeof(int32_t);
    }
    const size_t in = device.to_device_bytes - to_device;
    CHECK(in >= 2 * sizeof(int32_t) + hot_positions);
    CHECK(in <= 2 * sizeof(int32_t) + hot_positions + static_cast<size_t>(spec.n_layer) * embd_bytes);
  }
  CHECK(device.uploads == uploads_after_load);
}

TEST_CASE("the hybrid time split counts every step, its bus bytes exactly, and disjoint GPU and CPU spans",
          "[model][hybrid]") {
  const auto loaded = planted_model("time_split", true, "f16");
  const auto& spec = loaded->spec;
  auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  const auto placement = solver_placement(*loaded, "time_split");
  tc::test::HostDeviceBackend device(2);
  LlamaModel hybrid(*loaded, device, {.ffn_mode = FfnMode::Sparse}, HybridOptions{cpu.get(), placement, {}});
  const tc::model::HybridStepTimer& timer = hybrid.enable_time_split();
  CHECK(&hybrid.enable_time_split() == &timer);  // one timer, however often asked
  KvCache kv(device, spec, 2, 64);
  std::vector<float> logits;
  const size_t to_device = device.to_device_bytes, to_host = device.to_host_bytes;
  // A dense prompt step, two-sequence sparse steps (the per-token mask
  // crosses too), one-sequence sparse steps.
  const auto prompt = tc::test::random_tokens(12, 71, kVocab);
  const StepSequence first{0, prompt, false};
  REQUIRE(hybrid.forward({&first, 1}, kv, logits) == StepStatus::Ok);
  for (int step = 0; step < 6; ++step) {
    const TokenId a = static_cast<TokenId>((13 * step + 5) % kVocab), b = static_cast<TokenId>((7 * step + 2) % kVocab);
    const StepSequence both[] = {{0, std::span(&a, 1), false, true}, {1, std::span(&b, 1), false, true}};
    REQUIRE(hybrid.forward(step < 3 ? std::span(both) : std::span(both, 1), kv, logits) == StepStatus::Ok);
  }
  const tc::model::HybridTimeSplit& split = timer.split();
  CHECK(split.steps == 7);
  // Every byte the "GPU" moved on its stream, as it counted them.
  CHECK(split.bus_bytes == (device.to_device_bytes - to_device) + (device.to_host_bytes - to_host));
  // This GPU runs its ops when issued, on the host: its spans and the CPU's
  // cold neurons are then disjoint host intervals inside the steps.
  CHECK(split.gpu_timed);
  CHECK(split.gpu_s > 0);
  CHECK(split.cpu_s > 0);
  CHECK(split.wait_s >= 0);
  CHECK(split.gpu_s + split.cpu_s <= split.wall_s);

  // The report: per token, and against the limit of the bytes on each side.
  const auto bytes = tc::model::hybrid_bytes_per_token(*loaded, *hybrid.sparse_counters(), *hybrid.hybrid_counters(),
                                                       nullptr, split, 8.0);
  CHECK(bytes.gpu > 0);
  CHECK(bytes.cpu > 0);
  CHECK(bytes.bus > 0);
  const std::string text = tc::model::describe_time_split(split, bytes, {.pcie_h2d = 25e9, .host_dram = 50e9, .gpu = 2e12});
  CHECK_THAT(text, Catch::Contains("per token (7 steps)") && Catch::Contains("modelled limit") &&
                       Catch::Contains("of it achieved"));
  CHECK_THAT(tc::model::describe_time_split(split, bytes, {}), Catch::Contains("bandwidths not measured"));
}

TEST_CASE("the time split is hybrid mode's", "[model][hybrid]") {
  const auto loaded = planted_model("time_split_cpu", true, "f16");
  auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel on_cpu(*loaded, *cpu, {.ffn_mode = FfnMode::Sparse});
  CHECK_THROWS_WITH(on_cpu.enable_time_split(), Catch::Contains("hybrid") && Catch::Contains("--placement"));
}

TEST_CASE("hybrid mode refuses what it cannot run, saying why", "[model][hybrid]") {
  const auto loaded = planted_model("refuse", false, "f32");
  auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
  tc::test::HostDeviceBackend device(1);
  CHECK_THROWS_WITH(LlamaModel(*loaded, device, {.ffn_mode = FfnMode::Sparse}),
                    Catch::Contains("needs a neuron placement") && Catch::Contains("--placement"));
  CHECK_THROWS_WITH(LlamaModel(*loaded, device, {}, HybridOptions{cpu.get(), all_hot(loaded->spec), {}}),
                    Catch::Contains("runs the sparse FFN"));
  NeuronPlacement short_plan = all_hot(loaded->spec);
  short_plan.hot.pop_back();
  CHECK_THROWS_WITH(LlamaModel(*loaded, device, {.ffn_mode = FfnMode::Sparse},
                               HybridOptions{cpu.get(), short_plan, {}}),
                    Catch::Contains("1 layers; the model has 2"));
  NeuronPlacement unsorted = none_hot(loaded->spec);
  unsorted.hot[1] = {5, 3};
  CHECK_THROWS_WITH(LlamaModel(*loaded, device, {.ffn_mode = FfnMode::Sparse}, HybridOptions{cpu.get(), unsorted, {}}),
                    Catch::Contains("layer 1") && Catch::Contains("ascending"));
}
