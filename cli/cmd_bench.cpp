// `thermocline bench -m FILE -p 512 -n 128 -t T -r 5 [-o md|json]`: prompt
// (pp) and decode (tg) tokens/s as mean ± sd over repetitions, like
// llama-bench.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_setup.h"
#include "cli/runners.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/generation.h"
#include "engine/sparse/bandwidth_probe.h"
#include "engine/sparse/decode_bytes.h"
#include "kernels/backend.h"

namespace tc::cli {
namespace {

// The dtype of the last layer's FFN input matrix (ffn_gate; ffn_up where
// ungated or fused; ffn_gate_exps in a mixture of experts), or of its
// mixer's input (ssm_in, attn_q) where it has no FFN (Mamba alone).
std::string weight_type_summary(const model::LoadedModel& m) {
  const int64_t layer = m.spec.n_layer - 1;
  const std::string_view ffn = m.spec.layer_has_experts(layer)                                ? "ffn_gate_exps"
                               : m.spec.architecture->ffn_layout == model::FfnLayout::GateUp ? "ffn_gate"
                                                                                             : "ffn_up";
  for (const std::string_view tensor : {ffn, std::string_view("ssm_in"), std::string_view("attn_q")}) {
    if (const auto* t = m.file.find_tensor(model::layer_tensor_name(layer, tensor)); t != nullptr) {
      return std::string(kernels::dtype_name(t->dtype));
    }
  }
  return std::string(kernels::dtype_name(m.file.tensor("token_embd.weight").dtype));
}

// --time-split: where hybrid mode's steps went, against the modelled limit
// with bandwidths measured now on this machine (docs/hybrid.md).
struct TimeSplitReport {
  std::string text;
  nlohmann::json json;
};

TimeSplitReport time_split_report(runtime::RunnableModel& m, const model::HybridTimeSplit& split, double mean_context) {
  model::LlamaModel& llama = *m.llama;
  model::HybridPrefetch* prefetch = llama.hybrid_prefetch();
  const model::HybridBytes bytes =
      model::hybrid_bytes_per_token(*m.loaded, *llama.sparse_counters(), *llama.hybrid_counters(),
                                    prefetch != nullptr ? &prefetch->counters() : nullptr, split, mean_context);
  const sparse::Bandwidths bw = sparse::measure_bandwidths(*m.backend, *m.cpu_backend);
  const double n = static_cast<double>(std::max<int64_t>(split.steps, 1));
  const double limit = std::max({bytes.gpu / bw.gpu, bytes.cpu / bw.host_dram, bytes.bus / bw.pcie_h2d});
  nlohmann::json j = {{"steps", split.steps},
                      {"wall_ms", 1e3 * split.wall_s / n},
                      {"gpu_ms", split.gpu_timed ? nlohmann::json(1e3 * split.gpu_s / n) : nlohmann::json(nullptr)},
                      {"cpu_ms", 1e3 * split.cpu_s / n},
                      {"wait_ms", 1e3 * split.wait_s / n},
                      {"gpu_bytes", bytes.gpu},
                      {"cpu_bytes", bytes.cpu},
                      {"bus_bytes", bytes.bus},
                      {"gpu_bw", bw.gpu},
                      {"dram_bw", bw.host_dram},
                      {"pcie_bw", bw.pcie_h2d},
                      {"limit_ms", 1e3 * limit},
                      {"limit_fraction", limit / (split.wall_s / n)}};
  return {model::describe_time_split(split, bytes, bw), std::move(j)};
}

}  // namespace

void register_bench(CLI::App& app) {
  struct Options {
    std::string model;
    int threads = 0;
    ModelCliOptions sparsity;
    bool time_split = false;
    bool probe_bandwidth = false;
    std::string output = "md";
    runtime::BenchOptions bench;
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("bench", "Measure prompt and decode speed (llama-bench style)");
  sub->add_option("-m,--model", o->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  sub->add_option("-p,--n-prompt", o->bench.n_prompt, "Prompt tokens for the pp test (0: skip)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  sub->add_option("-n,--n-gen", o->bench.n_gen, "Tokens for the tg test (0: skip)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  sub->add_option("-d,--n-depth", o->bench.n_depth,
                  "Context tokens prefilled (untimed) before each test, as llama-bench -d: tg128@d4096 is decode "
                  "at 4096 tokens of context")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  sub->add_option("-b,--batch-size", o->bench.n_batch, "Prompt tokens per prefill step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("--parallel", o->bench.n_parallel,
                  "Also a tg test of this many sequences decoding together (tokens/s summed), as the server batches")
      ->check(CLI::Range(int64_t{1}, int64_t{256}));
  sub->add_option("-t,--threads", o->threads, "CPU threads (default: physical cores)")->check(CLI::Range(0, 1024));
  add_model_options(sub, o->sparsity);
  sub->add_option("-r,--repetitions", o->bench.repetitions, "Timed runs per test")->check(CLI::Range(1, 1000));
  sub->add_option("-o,--output", o->output, "Output format")->check(CLI::IsMember({"md", "json"}));
  sub->add_flag("--time-split", o->time_split,
                "Hybrid mode, with -p 0: also report where a decode token's time went (GPU busy, CPU cold neurons, "
                "waits, bus bytes) against the modelled limit from bandwidths measured at the end of the run");
  sub->add_flag("--probe-bandwidth", o->probe_bandwidth,
                "Also measure the memory bandwidth of the device the model runs on, after the tests (a GPU: a "
                "device-to-device copy, bytes read plus written; the CPU: a read by the threads), as probe_read_gbs "
                "in the JSON and a line in the table");
  runners()["bench"] = [o] {
    if (o->time_split && o->bench.n_prompt > 0) {
      throw std::invalid_argument("--time-split reports per decode token: pass -p 0 too (the prompt test's steps "
                                  "would count as tokens)");
    }
    runtime::RunnableModel m = open_cli_model(o->model, o->threads, o->sparsity, [o](const model::ModelSpec&) {
      return sparse::PlacementShape{.n_ctx = o->bench.n_depth + std::max<int64_t>(o->bench.n_prompt, o->bench.n_gen) + 1,
                                    .n_parallel = o->bench.n_parallel,
                                    .n_batch = std::max<int64_t>(o->bench.n_batch, o->bench.n_parallel)};
    });
    const auto& loaded = m.loaded;
    const auto& backend = m.backend;
    model::LlamaModel& llama = *m.llama;
    runtime::KvCache kv = m.make_kv_cache();
    // Throws, naming --placement, when not hybrid.
    const model::HybridStepTimer* timer = o->time_split ? &llama.enable_time_split() : nullptr;
    const auto series = runtime::run_bench(llama, kv, o->bench);
    std::optional<TimeSplitReport> split;
    // A tg token's mean context: the depth plus half the generated tokens.
    const double mean_context = static_cast<double>(o->bench.n_depth) + static_cast<double>(o->bench.n_gen) / 2.0;
    if (timer != nullptr) split = time_split_report(m, timer->split(), mean_context);
    // What a tg token reads, with the sparse FFN's measured neuron counts.
    const auto read = sparse::decode_bytes_per_token(*loaded, llama.sparse_counters(), mean_context, kv.types());
    const auto* counters = llama.sparse_counters();
    double computed = 1.0, predicted = 1.0;
    if (counters != nullptr) {
      int64_t tokens = 0, n_computed = 0, n_predicted = 0;
      for (size_t l = 0; l < counters->token_layers.size(); ++l) {
        tokens += counters->token_layers[l];
        n_computed += counters->computed[l];
        n_predicted += counters->predicted[l];
      }
      const double denom = static_cast<double>(std::max<int64_t>(tokens, 1) * loaded->spec.n_ff);
      computed = static_cast<double>(n_computed) / denom;
      predicted = static_cast<double>(n_predicted) / denom;
    }
    const double probe_gbs = o->probe_bandwidth ? sparse::measure_memory_bandwidth(*backend) * 1e-9 : 0.0;
    const std::string ffn_mode(model::ffn_mode_name(llama.options().ffn_mode));
    const std::string model_name = std::filesystem::path(o->model).filename().string();
    if (o->output == "json") {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& s : series) {
        j.push_back({{"model", model_name},
                     {"type", weight_type_summary(*loaded)},
                     {"backend", backend->name()},
                     {"threads", backend->n_threads()},
                     {"test", s.test},
                     {"ffn", ffn_mode},
                     {"ffn_predicted_fraction", predicted},
                     {"ffn_computed_fraction", computed},
                     {"read_bytes_per_token", read.total()},
                     {"avg_ts", s.mean()},
                     {"stddev_ts", s.stddev()},
                     {"samples_ts", s.tokens_per_second}});
        if (split) j.back()["time_split"] = split->json;
        if (o->probe_bandwidth) j.back()["probe_read_gbs"] = probe_gbs;
        if (const std::string g = backend->graph_summary(); !g.empty()) j.back()["step_graphs"] = g;
      }
      std::cout << j.dump(2) << "\n";
    } else {
      std::printf("| model | type | ffn | backend | threads | test | t/s |\n"
                  "| --- | --- | --- | --- | ---: | ---: | ---: |\n");
      for (const auto& s : series) {
        std::printf("| %s | %s | %s | %s | %d | %s | %.2f ± %.2f |\n", model_name.c_str(),
                    weight_type_summary(*loaded).c_str(), ffn_mode.c_str(), backend->name().c_str(),
                    backend->n_threads(), s.test.c_str(), s.mean(), s.stddev());
      }
      constexpr double kMB = 1e6;
      std::printf("\nread per decode token: %.1f MB (attention %.1f, predictors %.1f, FFN %.1f, head %.1f, KV %.1f)",
                  read.total() / kMB, read.attention / kMB, read.predictors / kMB, read.ffn / kMB, read.head / kMB,
                  read.kv / kMB);
      if (counters != nullptr) {
        std::printf("; FFN neurons predicted %.1f%%, computed %.1f%%", 100.0 * predicted, 100.0 * computed);
      }
      std::printf("\n");
      if (o->probe_bandwidth) std::printf("memory bandwidth of %s: %.1f GB/s\n", backend->name().c_str(), probe_gbs);
      if (const std::string g = backend->graph_summary(); !g.empty()) std::printf("%s\n", g.c_str());
      if (split) std::printf("\n%s", split->text.c_str());
    }
    return 0;
  };
}

}  // namespace tc::cli
