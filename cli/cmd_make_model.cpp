// `thermocline make-model -o FILE [dims] [--type T] [--ffn F] [--seed S]`.
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/runners.h"
#include "profiler/make_model.h"

namespace tc::cli {

void register_make_model(CLI::App& app) {
  auto o = std::make_shared<profiler::MakeModelOptions>();
  auto ffn = std::make_shared<std::string>("swiglu");
  auto tokenizer = std::make_shared<std::string>("llama");
  auto* sub = app.add_subcommand("make-model", "Write a llama-architecture GGUF with seeded random weights");
  std::string out;
  sub->add_option("-o,--output", o->output, "Output GGUF file")->required();
  sub->add_option("--seed", o->seed, "RNG seed (same seed and options: same bytes)");
  sub->add_option("--n-vocab", o->n_vocab, "Vocabulary size")->check(CLI::Range(int64_t{512}, int64_t{1} << 20));
  sub->add_option("--n-embd", o->n_embd, "Embedding width")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("--n-layer", o->n_layer, "Transformer blocks")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  sub->add_option("--n-ff", o->n_ff, "FFN width (neurons)")->check(CLI::Range(int64_t{1}, int64_t{1} << 18));
  sub->add_option("--n-head", o->n_head, "Attention heads")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  sub->add_option("--n-head-kv", o->n_head_kv, "KV heads (GQA)")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  sub->add_option("--n-ctx", o->n_ctx, "Training context length written to the file")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  sub->add_option("--rope-freq-base", o->rope_freq_base, "RoPE base frequency");
  sub->add_option("--ffn", *ffn, "FFN form")->check(CLI::IsMember({"swiglu", "reglu", "drelu"}));
  sub->add_option("--type", o->weight_type, "Weight type")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k", "q4_k_m"}));
  sub->add_flag("--tied-embeddings", o->tied_embeddings, "Omit output.weight (the head reuses token_embd)");
  sub->add_option("--tokenizer", *tokenizer, "Tokenizer kind")->check(CLI::IsMember({"llama", "gpt2"}));
  sub->add_option("--vocab-text", o->vocab_text, "Text to learn the vocabulary from (default: built-in corpus)")
      ->check(CLI::ExistingFile);
  sub->add_option("--weight-scale", o->weight_scale, "Weight standard deviation (default 1/sqrt(fan_in))");
  sub->add_option("--name", o->name, "general.name");
  sub->add_option("-t,--threads", o->n_threads, "Worker threads (default: all cores)");
  runners()["make-model"] = [o, ffn, tokenizer] {
    model::parse_ffn_form(*ffn, o->ffn_form);
    o->tokenizer = *tokenizer == "gpt2" ? text::TokenizerKind::Bpe : text::TokenizerKind::Spm;
    const auto start = std::chrono::steady_clock::now();
    ProgressBar bar("writing " + o->output.filename().string());
    profiler::make_model(*o, [&bar](uint64_t done, uint64_t total) { bar.update(done, total); });
    bar.finish();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "wrote %s in %.1f s\n", o->output.string().c_str(), secs);
    return 0;
  };
}

}  // namespace tc::cli
