// `thermocline profile -m FILE --corpus TEXT [--tokens N] [--ctx N] -o STATS
// [--report DIR]`: counts how often each FFN neuron fires over a corpus,
// writes the activation statistics file, and prints the per-layer report.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/runners.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/activation_stats.h"
#include "kernels/backend.h"
#include "profiler/profile.h"
#include "profiler/profile_report.h"

namespace tc::cli {
void register_profile(CLI::App& app) {
  struct Options {
    std::string model;
    std::string corpus;
    std::string output;
    std::string report_dir;
    int threads = 0;
    int64_t n_ctx = 0;
    profiler::ProfileOptions profile;
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
  runners()["profile"] = [o] {
    const auto loaded = model::load_model(o->model);
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
    {
      TokenProgress progress("profile");
      const auto on_progress = [&progress](int64_t done, int64_t total) { progress.update(done, total); };
      stats = profiler::profile_activations(*loaded, *backend, tokens, vocab.add_bos ? vocab.bos_id : -1, o->profile,
                                            on_progress);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sparse::write_activation_stats(stats, o->output);
    std::fprintf(stderr, "%llu tokens in %.1f s (%.0f tokens/s); wrote %s\n",
                 static_cast<unsigned long long>(stats.n_tokens), secs, static_cast<double>(stats.n_tokens) / secs,
                 o->output.c_str());
    if (!o->report_dir.empty()) {
      std::cout << profiler::write_report(stats, o->report_dir);
      std::fprintf(stderr, "wrote %s/report.md and %s/firing.svg\n", o->report_dir.c_str(), o->report_dir.c_str());
    } else {
      std::cout << profiler::report_markdown(stats, profiler::summarize(stats));
    }
    return 0;
  };
}

}  // namespace tc::cli
