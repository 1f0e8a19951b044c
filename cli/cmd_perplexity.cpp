// `thermocline perplexity -m FILE -f TEXT [--ctx N] [--batch N] [--threads N]
// [--chunks N]`: llama.cpp's perplexity over a text file; the running value
// after each chunk, then `ppl = X +/- Y`, on stdout.

#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/model_setup.h"
#include "cli/runners.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/perplexity.h"
#include "kernels/backend.h"

namespace tc::cli {
void register_perplexity(CLI::App& app) {
  struct Options {
    std::string model;
    std::string text;
    int threads = 0;
    ModelCliOptions sparsity;
    int64_t n_ctx = 0;
    int64_t n_batch = 512;
    int64_t n_chunks = 0;
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "perplexity",
      "Perplexity of a model on a text file, by llama.cpp's method: the text (with BOS as the vocab asks) is cut "
      "into chunks of --ctx tokens, each run from an empty KV cache with BOS first, and the second half of each "
      "chunk is scored. Prints the running perplexity after each chunk, then `ppl = X +/- Y` (standard error). "
      "The text needs at least 2 x --ctx tokens.");
  sub->add_option("-m,--model", o->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  sub->add_option("-f,--file", o->text, "Text file to score (UTF-8)")->required()->check(CLI::ExistingFile);
  sub->add_option("-c,--ctx", o->n_ctx, "Tokens per chunk (default: 512, at most the model's context)")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 20));
  sub->add_option("-b,--batch", o->n_batch, "Tokens per forward step inside a chunk")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("-t,--threads", o->threads, "CPU threads (default: physical cores)")->check(CLI::Range(0, 1024));
  auto* sparse_max = add_model_options(sub, o->sparsity);
  sub->add_option("--chunks", o->n_chunks, "Chunks to score at most (default 0: every whole chunk)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  runners()["perplexity"] = [o, sparse_max] {
    // Every scored token is a prompt token here: in sparse mode let whole
    // steps run sparse unless told otherwise (each token still uses only its
    // own predicted neurons, as in decode).
    if (sparse_max->count() == 0) o->sparsity.sparse_max_tokens = o->n_batch;
    runtime::RunnableModel m = open_cli_model(o->model, o->threads, o->sparsity, [o](const model::ModelSpec& spec) {
      const int64_t n_ctx = o->n_ctx > 0 ? o->n_ctx : std::min<int64_t>(512, spec.n_ctx_train);
      const int64_t n_batch = std::min(o->n_batch, n_ctx);
      // Every token of a step is scored: its logits all come back.
      return sparse::PlacementShape{.n_ctx = n_ctx, .n_parallel = 1, .n_batch = n_batch, .n_logit_rows = n_batch};
    });
    const auto& loaded = m.loaded;
    const auto& backend = m.backend;
    model::LlamaModel& llama = *m.llama;
    const int64_t n_ctx = m.shape.n_ctx;
    if (n_ctx > loaded->spec.n_ctx_train) {
      std::fprintf(stderr, "warning: --ctx %lld is longer than the model's training context %lld\n",
                   static_cast<long long>(n_ctx), static_cast<long long>(loaded->spec.n_ctx_train));
    }
    const auto& vocab = loaded->tokenizer->vocab();
    const auto tokens = loaded->tokenizer->encode(read_text_input(o->text));
    runtime::KvCache kv = m.make_kv_cache();
    const runtime::PerplexityOptions options{n_ctx, o->n_batch, o->n_chunks};
    const int64_t n_whole = static_cast<int64_t>(tokens.size()) / n_ctx;
    const int64_t n_chunks = o->n_chunks > 0 ? std::min(o->n_chunks, n_whole) : n_whole;
    std::fprintf(stderr, "model %s, %s | %s: %zu tokens, %lld chunks of %lld\n", o->model.c_str(),
                 backend->name().c_str(), o->text.c_str(), tokens.size(), static_cast<long long>(n_chunks),
                 static_cast<long long>(n_ctx));
    TokenProgress progress("perplexity");
    runtime::PerplexityCallbacks callbacks;
    callbacks.on_progress = [&progress](int64_t done, int64_t total) { progress.update(done, total); };
    callbacks.on_chunk = [&progress](const runtime::PerplexityChunk& c) {
      progress.clear();
      std::printf("[%lld/%lld] ppl %.4f\n", static_cast<long long>(c.index + 1), static_cast<long long>(c.n_chunks),
                  c.running_ppl);
      std::fflush(stdout);
    };
    const auto start = std::chrono::steady_clock::now();
    const auto r = runtime::perplexity(llama, kv, tokens, vocab.add_bos ? vocab.bos_id : -1, options, callbacks);
    progress.clear();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("ppl = %.4f +/- %.5f\n", r.ppl, r.ppl_error);
    std::fprintf(stderr, "%lld tokens scored in %lld chunks, mean nll %.5f nats, %.1f s (%.0f tokens/s)\n",
                 static_cast<long long>(r.n_scored), static_cast<long long>(r.n_chunks), r.mean_nll, secs,
                 static_cast<double>(r.n_chunks * n_ctx) / secs);
    return 0;
  };
}

}  // namespace tc::cli
