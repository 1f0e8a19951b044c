// `thermocline profile -m FILE --corpus TEXT [--tokens N] [--ctx N] -o STATS
// [--report DIR] [--train-predictors ...] [--teal]`: counts how often each FFN neuron
// fires over a corpus, writes the activation statistics file, and prints the
// per-layer report; optionally builds activation predictors (trained or gate
// SVD) and TEAL thresholds into the same file, with their own report.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/runners.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/activation_stats.h"
#include "engine/sparse/teal.h"
#include "kernels/backend.h"
#include "kernels/dtype.h"
#include "profiler/predictor_report.h"
#include "profiler/predictor_samples.h"
#include "profiler/predictor_training.h"
#include "profiler/profile.h"
#include "profiler/profile_report.h"
#include "profiler/teal_calibration.h"

namespace tc::cli {
namespace {

struct PredictorFlags {
  bool train = false;
  std::string kind = "trained";
  double target_recall = 0.99;
  int64_t max_rank = -1;  // -1: not given (profiler::auto_max_rank)
  std::string type = "f16";
  int64_t tokens = 16384;
};

// The predictor options from the flags, checked against the model before
// any long run starts.
profiler::PredictorOptions predictor_options(const PredictorFlags& f, const model::ModelSpec& spec, int threads) {
  profiler::PredictorOptions o;
  if (!profiler::parse_predictor_kind(f.kind, o.kind)) {
    throw std::invalid_argument("--predictor-kind '" + f.kind + "': expected trained or svd");
  }
  const auto dtype = kernels::dtype_from_name(f.type);
  if (!dtype) throw std::invalid_argument("--predictor-type '" + f.type + "' is not a known type");
  o.dtype = *dtype;
  o.target_recall = f.target_recall;
  o.max_rank = f.max_rank >= 0 ? f.max_rank : profiler::auto_max_rank(spec);
  o.n_threads = threads;
  try {
    profiler::check_predictor_options(o, spec);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--train-predictors: ") + e.what());
  }
  return o;
}

// Records samples over the profiled tokens and builds the predictors, with
// progress lines on a terminal.
profiler::PredictorBuild build_predictors(const model::LoadedModel& loaded, kernels::Backend& backend,
                                          std::span<const text::TokenId> tokens, text::TokenId bos,
                                          const profiler::ProfileOptions& profile, const PredictorFlags& flags,
                                          const profiler::PredictorOptions& options) {
  const auto& spec = loaded.spec;
  profiler::RecordOptions record;
  record.n_ctx = profile.n_ctx;
  record.n_batch = profile.n_batch;
  record.max_samples = flags.tokens;
  std::fprintf(stderr, "predictors: recording up to %lld tokens per layer (at most %.1f MiB)\n",
               static_cast<long long>(flags.tokens),
               static_cast<double>(profiler::predictor_samples_bytes(spec.n_layer, spec.n_embd, spec.n_ff, flags.tokens)) /
                   1048576.0);
  profiler::PredictorSamples samples;
  {
    TokenProgress progress("predictor samples");
    samples = profiler::record_predictor_samples(loaded, backend, tokens, bos, record,
                                                 [&progress](int64_t done, int64_t total) { progress.update(done, total); });
  }
  TokenProgress progress(std::string("predictors (") + std::string(profiler::predictor_kind_name(options.kind)) + ")");
  return profiler::build_predictors(loaded.file, spec, samples, options,
                                    [&progress](int64_t done, int64_t total) { progress.update(done, total); });
}

}  // namespace

void register_profile(CLI::App& app) {
  struct Options {
    std::string model;
    std::string corpus;
    std::string output;
    std::string report_dir;
    int threads = 0;
    int64_t n_ctx = 0;
    profiler::ProfileOptions profile;
    PredictorFlags predictors;
    bool teal = false;
  };
  auto o = std::make_shared<Options>();
  o->profile.max_tokens = 131072;
  auto* sub = app.add_subcommand(
      "profile",
      "Record how often each FFN neuron fires over a text corpus (activation statistics for neuron placement). "
      "The corpus is cut into chunks of --ctx tokens, each run from an empty KV cache with BOS first. A neuron "
      "fires on a token when gate > 0 (ReGLU), gate > 0 and up > 0 (dReLU), or, for SwiGLU models, when "
      "|silu(gate) * up| is above a per-layer threshold set on the first chunk so that --silu-fire-fraction of "
      "the activations there are above it. Writes the statistics (GGUF) to -o and prints a per-layer report.");
  sub->add_option("-m,--model", o->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  sub->add_option("--corpus", o->corpus, "Text file to run the model over (UTF-8)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("-o,--output", o->output, "Statistics file to write (GGUF, e.g. model.stats.gguf)")
      ->required()
      ->type_name("FILE");
  sub->add_option("--report", o->report_dir, "Also write DIR/report.md and DIR/firing.svg (log-log plot)")
      ->type_name("DIR");
  sub->add_option("-n,--tokens", o->profile.max_tokens, "Corpus tokens to profile at most (0: all)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{2147483647}));
  sub->add_option("-c,--ctx", o->n_ctx, "Tokens per chunk (default: 512, at most the model's context)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_option("-b,--batch", o->profile.n_batch, "Tokens per forward step inside a chunk")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("-t,--threads", o->threads, "CPU threads (default: physical cores)")->check(CLI::Range(0, 1024));
  sub->add_option("--silu-fire-fraction", o->profile.silu_fire_fraction,
                  "SwiGLU models: fraction of activations counted as firing on the calibration chunk")
      ->capture_default_str()
      ->check(CLI::Range(0.001f, 0.999f));
  auto* train = sub->add_flag("--train-predictors", o->predictors.train,
                               "Also build activation predictors (blk.N.fc1/fc2, per-layer thresholds) into the "
                               "statistics file; ReLU-family models (reglu, drelu) only. See docs/profiling.md");
  sub->add_option("--predictor-kind", o->predictors.kind,
                  "trained: low-rank MLPs trained on recorded firings; svd: truncated SVD of the gate, no training")
      ->capture_default_str()
      ->needs(train)
      ->check(CLI::IsMember({"trained", "svd"}));
  sub->add_option("--target-recall", o->predictors.target_recall,
                  "Recall each layer's predictor must reach on held-out tokens, in (0, 1]")
      ->capture_default_str()
      ->needs(train);
  sub->add_option("--max-rank", o->predictors.max_rank,
                  "Largest predictor rank tried (candidates 16, 32, 64, ...; default: the largest whose predictor "
                  "has at most a quarter of the layer's FFN weights)")
      ->needs(train);
  sub->add_option("--predictor-type", o->predictors.type, "dtype of fc1/fc2 (f32, f16, bf16, q8_0, q4_0, q4_k, q6_k)")
      ->capture_default_str()
      ->needs(train);
  sub->add_option("--predictor-tokens", o->predictors.tokens,
                  "Tokens recorded per layer for training, calibration and evaluation (memory: about "
                  "n_layer * N * 4 * n_embd bytes); the recording pass runs over 4 N corpus tokens")
      ->capture_default_str()
      ->needs(train)
      ->check(CLI::Range(int64_t{64}, int64_t{1} << 24));
  sub->add_flag("--teal", o->teal,
                "Also calibrate TEAL thresholds (magnitude quantiles of every linear layer's input, per layer, at "
                "sparsity 0.05 ... 0.95) into the statistics file, for --sparsity teal:X. See docs/sparsity.md");
  runners()["profile"] = [o] {
    const auto loaded = model::load_model(o->model);
    profiler::PredictorOptions predictor_options_checked;
    if (o->predictors.train) predictor_options_checked = predictor_options(o->predictors, loaded->spec, o->threads);
    o->profile.n_ctx = o->n_ctx > 0 ? o->n_ctx : std::min<int64_t>(512, loaded->spec.n_ctx_train);
    if (o->profile.n_ctx > loaded->spec.n_ctx_train) {
      std::fprintf(stderr, "warning: --ctx %lld is longer than the model's training context %lld\n",
                   static_cast<long long>(o->profile.n_ctx), static_cast<long long>(loaded->spec.n_ctx_train));
    }
    o->profile.corpus_name = std::filesystem::path(o->corpus).filename().string();
    const auto& vocab = loaded->tokenizer->vocab();
    const auto tokens = loaded->tokenizer->encode(read_text_input(o->corpus));
    auto backend = kernels::create_backend(kernels::DeviceKind::Cpu, {.n_threads = o->threads});
    const auto n_corpus = static_cast<int64_t>(tokens.size());
    const int64_t n_use = o->profile.max_tokens > 0 ? std::min(o->profile.max_tokens, n_corpus) : n_corpus;
    std::fprintf(stderr, "model %s, %s | %s: %lld tokens, profiling %lld in chunks of %lld\n", o->model.c_str(),
                 backend->name().c_str(), o->corpus.c_str(), static_cast<long long>(n_corpus),
                 static_cast<long long>(n_use), static_cast<long long>(o->profile.n_ctx));
    const auto start = std::chrono::steady_clock::now();
    sparse::ActivationStats stats;
    std::vector<double> overlap;
    {
      TokenProgress progress("profile");
      const auto on_progress = [&progress](int64_t done, int64_t total) { progress.update(done, total); };
      auto options = o->profile;
      options.consecutive_overlap = &overlap;
      stats = profiler::profile_activations(*loaded, *backend, tokens, vocab.add_bos ? vocab.bos_id : -1, options,
                                            on_progress);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "%llu tokens in %.1f s (%.0f tokens/s)\n", static_cast<unsigned long long>(stats.n_tokens),
                 secs, static_cast<double>(stats.n_tokens) / secs);
    std::string per_layer;
    for (double x : overlap) per_layer += fmt::format("{}{:.3f}", per_layer.empty() ? "" : " ", x);
    std::fprintf(stderr, "temporal locality: of a token's firing neurons, the share that fired for the token before, "
                 "per layer: %s\n", per_layer.c_str());
    std::optional<profiler::PredictorBuild> predictors;
    if (o->predictors.train) {
      predictors = build_predictors(*loaded, *backend, std::span(tokens).first(static_cast<size_t>(n_use)),
                                    vocab.add_bos ? vocab.bos_id : -1, o->profile, o->predictors,
                                    predictor_options_checked);
      std::fprintf(stderr, "%s", profiler::predictor_summary(*predictors).c_str());
    }
    std::optional<sparse::TealCalibration> teal;
    if (o->teal) {
      TokenProgress progress("TEAL calibration");
      profiler::TealCalibrationOptions teal_options;
      teal_options.n_ctx = o->profile.n_ctx;
      teal_options.n_batch = o->profile.n_batch;
      teal_options.max_tokens = n_use;
      teal = profiler::calibrate_teal(*loaded, *backend, tokens, vocab.add_bos ? vocab.bos_id : -1, teal_options,
                                      [&progress](int64_t done, int64_t total) { progress.update(done, total); });
    }
    const sparse::StatsSections predictor_section =
        predictors ? profiler::predictor_sections(*predictors) : sparse::StatsSections{};
    const sparse::StatsSections teal_section = teal ? sparse::teal_section(*teal) : sparse::StatsSections{};
    sparse::write_activation_stats(stats, o->output, [&](gguf::GgufWriter& w) {
      if (predictor_section) predictor_section(w);
      if (teal_section) teal_section(w);
    });
    if (teal) std::fprintf(stderr, "TEAL: calibrated on %llu tokens\n", static_cast<unsigned long long>(teal->n_tokens));
    std::fprintf(stderr, "wrote %s\n", o->output.c_str());
    if (!o->report_dir.empty()) {
      std::cout << profiler::write_report(stats, o->report_dir);
      std::fprintf(stderr, "wrote %s/report.md and %s/firing.svg\n", o->report_dir.c_str(), o->report_dir.c_str());
    } else {
      std::cout << profiler::report_markdown(stats, profiler::summarize(stats));
    }
    if (predictors) {
      if (o->report_dir.empty()) {
        std::cout << "\n" << profiler::predictor_report_markdown(*predictors);
      } else {
        std::cout << "\n" << profiler::write_predictor_report(*predictors, o->report_dir);
        std::fprintf(stderr, "wrote %s/predictors.md\n", o->report_dir.c_str());
      }
    }
    return 0;
  };
}

}  // namespace tc::cli
