// `thermocline make-model -o FILE [dims] [--type T] [--ffn F] [--seed S]
// [--sparse [--sparse-active A] [--sparse-alpha X] [--predictor-rank R] [--layout gguf|pwri]]`.
#include <chrono>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/runners.h"
#include "engine/gguf/gguf_file.h"
#include "profiler/make_model.h"
#include "profiler/sparse_planting.h"

namespace tc::cli {
namespace {

// One line saying what was planted, read back from the file.
void print_sparse_summary(const std::filesystem::path& path) {
  const auto f = gguf::GgufFile::open(path);
  std::string per_layer;
  for (float a : f.get_f32_array(profiler::kLayerActiveKey)) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%s%.3f", per_layer.empty() ? "" : " ", a);
    per_layer += buf;
  }
  std::fprintf(stderr,
               "planted: %s, active %.3f, alpha %.2f, predictor rank %llu; calibration active per layer: %s\n",
               f.magic() == gguf::Magic::PWRI ? "PWRI layout (ffn_down_t)" : "GGUF layout (ffn_down)",
               f.get_f64(profiler::kSparseActiveKey), f.get_f64(profiler::kSparseAlphaKey),
               static_cast<unsigned long long>(f.get_u64(profiler::kPredictorRankKey)), per_layer.c_str());
  if (f.has(sparse::kLayerThresholdsKey)) {
    std::string thresholds;
    for (float t : f.get_f32_array(sparse::kLayerThresholdsKey)) {
      char buf[24];
      std::snprintf(buf, sizeof buf, "%s%.3g", thresholds.empty() ? "" : " ", static_cast<double>(t));
      thresholds += buf;
    }
    std::fprintf(stderr, "quantized predictors: per-layer thresholds %s (recall %.3f of the calibration firings)\n",
                 thresholds.c_str(), profiler::kPlantedRecall);
  }
}

}  // namespace

void register_make_model(CLI::App& app) {
  auto o = std::make_shared<profiler::MakeModelOptions>();
  auto ffn = std::make_shared<std::string>("swiglu");
  auto tokenizer = std::make_shared<std::string>("llama");
  auto layout = std::make_shared<std::string>("gguf");
  auto* sub = app.add_subcommand("make-model",
                                 "Write a llama-architecture GGUF with seeded random weights (PowerInfer's bamboo: "
                                 "a dReLU model in the PWRI layout)");
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
  auto* ffn_opt = sub->add_option("--ffn", *ffn, "FFN form (default swiglu; reglu with --sparse)")
                      ->check(CLI::IsMember({"swiglu", "reglu", "drelu"}));
  sub->add_option("--type", o->weight_type, "Weight type")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(profiler::kMakeModelTypes),
                                                     std::end(profiler::kMakeModelTypes))));
  sub->add_flag("--tied-embeddings", o->tied_embeddings, "Omit output.weight (the head reuses token_embd)");
  sub->add_option("--tokenizer", *tokenizer, "Tokenizer kind")->check(CLI::IsMember({"llama", "gpt2"}));
  sub->add_option("--vocab-text", o->vocab_text, "Text to learn the vocabulary from (default: built-in corpus)")
      ->check(CLI::ExistingFile);
  sub->add_option("--weight-scale", o->weight_scale, "Weight standard deviation (default 1/sqrt(fan_in))");
  sub->add_option("--name", o->name, "general.name");
  sub->add_option("-t,--threads", o->n_threads, "Worker threads (default: all cores)");

  auto* sparse = sub->add_flag("--sparse", o->sparse.enabled,
                               "Plant sparse ReLU activations (power-law firing rates) and write exact predictors "
                               "(blk.N.fc1/fc2); see docs/synthetic-sparse-models.md");
  sub->add_option("--sparse-active", o->sparse.active, "Mean fraction of FFN neurons active per token")
      ->check(CLI::Range(profiler::kMinFireFrequency, profiler::kMaxFireFrequency))
      ->needs(sparse);
  sub->add_option("--sparse-alpha", o->sparse.alpha,
                  "Power-law exponent of the firing frequency over neuron rank (0: all equal)")
      ->check(CLI::Range(0.0, 16.0))
      ->needs(sparse);
  sub->add_option("--predictor-rank", o->sparse.predictor_rank,
                  "Predictor rank r: fc1 [n_embd, r], fc2 [r, n_ff] (default n_embd/4, multiple of 64)")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 17))
      ->needs(sparse);
  sub->add_option("--predictor-type", o->sparse.predictor_type, "Type of fc1/fc2 (default: --type)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k"}))
      ->needs(sparse);
  sub->add_option("--layout", *layout,
                  "gguf: ffn_down, magic GGUF; pwri: PowerInfer's ffn_down_t, magic PWRI")
      ->check(CLI::IsMember({"gguf", "pwri"}))
      ->needs(sparse);
  sub->add_flag("--no-predictors", [o](int64_t) { o->sparse.write_predictors = false; },
                "Leave fc1/fc2 out: a plain llama.cpp-loadable file (train predictors with `thermocline profile "
                "--train-predictors`)")
      ->needs(sparse);
  sub->add_option("--calib-tokens", o->sparse.calib_tokens, "Tokens of the calibration forward pass")
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 16))
      ->needs(sparse);

  runners()["make-model"] = [o, ffn, tokenizer, layout, ffn_opt] {
    if (o->sparse.enabled && ffn_opt->count() == 0) *ffn = "reglu";
    model::parse_ffn_form(*ffn, o->ffn_form);
    o->tokenizer = *tokenizer == "gpt2" ? text::TokenizerKind::Bpe : text::TokenizerKind::Spm;
    o->sparse.layout = *layout == "pwri" ? profiler::SparseLayout::PowerInfer : profiler::SparseLayout::Gguf;
    const auto start = std::chrono::steady_clock::now();
    ProgressBar bar("writing " + o->output.filename().string());
    profiler::make_model(*o, [&bar](uint64_t done, uint64_t total) { bar.update(done, total); });
    bar.finish();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "wrote %s in %.1f s\n", o->output.string().c_str(), secs);
    if (o->sparse.enabled) print_sparse_summary(o->output);
    return 0;
  };
}

}  // namespace tc::cli
