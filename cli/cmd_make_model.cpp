// `thermocline make-model -o FILE [--arch A] [dims] [--type T] [--ffn F] [--seed S]
// [architecture options] [--sparse [--sparse-active A] [--sparse-alpha X] [--sparse-overlap F] [--predictor-rank R]
// [--layout gguf|pwri]]`.
#include <chrono>
#include <cstdio>
#include <string_view>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/runners.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_split.h"
#include "profiler/make_model.h"
#include "profiler/sparse_planting.h"

namespace tc::cli {
namespace {

// One line saying what was planted, read back from the file.
void print_sparse_summary(const std::filesystem::path& path) {
  const auto f = gguf::GgufFile::open(path);
  auto joined = [&f](std::string_view key) {
    std::string text;
    for (float a : f.get_f32_array(key)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%s%.3f", text.empty() ? "" : " ", static_cast<double>(a));
      text += buf;
    }
    return text;
  };
  const std::string per_layer = joined(profiler::kLayerActiveKey);
  std::fprintf(stderr,
               "planted: %s, active %.3f, alpha %.2f, predictor rank %llu; calibration active per layer: %s\n",
               f.magic() == gguf::Magic::PWRI ? "PWRI layout (ffn_down_t)" : "GGUF layout (ffn_down)",
               f.get_f64(profiler::kSparseActiveKey), f.get_f64(profiler::kSparseAlphaKey),
               static_cast<unsigned long long>(f.get_u64(profiler::kPredictorRankKey)), per_layer.c_str());
  // The consecutive overlap per layer, planted or (0) as independent tokens give it.
  std::fprintf(stderr, "overlap with the previous token's active neurons%s per layer: %s\n",
               f.get_f64(profiler::kSparseOverlapKey) > 0 ? " (planted)" : "",
               joined(profiler::kLayerOverlapKey).c_str());
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
                                 "Write a GGUF of any supported architecture with seeded random weights "
                                 "(PowerInfer's bamboo: a dReLU --sparse model in the PWRI layout)");
  sub->add_option("-o,--output", o->output, "Output GGUF file")->required();
  std::vector<std::string> arch_names;
  for (const auto& a : model::architectures()) {
    if (a.name != model::kArchBamboo) arch_names.emplace_back(a.name);
  }
  sub->add_option("--arch", o->arch, "Architecture (general.architecture), with its keys and tensors as llama.cpp "
                                     "reads them")
      ->check(CLI::IsMember(arch_names));
  sub->add_option("--seed", o->seed, "RNG seed (same seed and options: same bytes)");
  sub->add_option("--n-vocab", o->n_vocab, "Vocabulary size")->check(CLI::Range(int64_t{512}, int64_t{1} << 20));
  sub->add_option("--n-embd", o->n_embd, "Embedding width")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("--n-layer", o->n_layer, "Transformer blocks")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  sub->add_option("--n-ff", o->n_ff, "FFN width (neurons)")->check(CLI::Range(int64_t{1}, int64_t{1} << 18));
  sub->add_option("--n-head", o->n_head, "Attention heads")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  sub->add_option("--n-head-kv", o->n_head_kv, "KV heads (GQA)")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  sub->add_option("--n-ctx", o->n_ctx, "Training context length written to the file")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  sub->add_option("--rope-freq-base", o->rope_freq_base,
                  "RoPE base frequency (default: the architecture's usual one, 10000 or 1e6)");
  auto* ffn_opt = sub->add_option("--ffn", *ffn,
                                  "FFN form (default: the architecture's first, swiglu for llama; reglu with --sparse)")
                      ->check(CLI::IsMember({"swiglu", "reglu", "drelu", "geglu", "gelu", "relu", "relu2"}));
  sub->add_option("--head-dim", o->head_dim, "Head size (attention.key_length), when not n_embd / n_head")
      ->check(CLI::Range(int64_t{2}, int64_t{1024}));
  sub->add_option("--rope-dims", o->n_rot, "Dimensions of each head RoPE rotates (rope.dimension_count), when not all")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  sub->add_flag("--attn-bias", o->attn_bias, "q/k/v biases (qwen2 always has them)");
  sub->add_flag("--mrope", o->mrope_sections,
                "Multimodal RoPE sections (rope.dimension_sections: GLM-4.1V's glm4, GLM-4.5V's glm4moe); "
                "qwen2vl, qwen3vl and qwen3vlmoe always have them");
  sub->add_flag("--fused-qkv", o->fused_qkv,
                "One attn_qkv tensor for q, k and v (phi3 and falcon always; qwen3next: one ssm_in for q, k, v, z)");
  sub->add_option("--sliding-window", o->sliding_window,
                  "attention.sliding_window (llama: every layer, as Mistral; gemma2/3: the windowed layers)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  sub->add_option("--swa-pattern", o->swa_pattern,
                  "attention.sliding_window_pattern: every N-th layer is global, the others windowed (gemma2/3)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  sub->add_option("--shared-kv-layers", o->shared_kv_layers,
                  "gemma4: the last N layers attend over earlier layers' caches (attention.shared_kv_layers)")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
  sub->add_flag("--no-ssm-norm", o->no_ssm_norm, "falcon-h1: Mamba-2 without ssm_norm (mamba_rms_norm off)");
  sub->add_flag("--ssm-dt-b-c-rms", o->ssm_dt_b_c_rms, "mamba: dt, B and C RMS-normed (Falcon-Mamba's ssm.dt_b_c_rms)");
  sub->add_option("--hidden-act", o->hidden_act,
                  "modern-bert: hidden_activation (gelu: GeGLU, the default; silu: SwiGLU; other names: GeGLU)");
  sub->add_flag("--reranker", o->reranker,
                "bert, modern-bert, jina-bert-v2 (one-row cls): a cross-encoder reranker (rank pooling, a one-label "
                "classifier head); qwen3: Qwen3-Reranker's form (yes/no rows, a rerank prompt template)");
  sub->add_option("--ssm-state", o->ssm_state, "granitehybrid: Mamba-2's states per group (ssm.state_size, default 16)")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
  sub->add_option("--n-embd-per-layer", o->n_embd_per_layer,
                  "gemma4: per-layer inputs of N values per layer (embedding_length_per_layer_input)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
  sub->add_flag("--rope-freqs", o->rope_freqs, "llama: Llama 3.1-like RoPE frequency factors (rope_freqs.weight)");
  sub->add_option("--rope-scale-linear", o->rope_scale_linear, "rope.scaling.type linear with this factor")
      ->check(CLI::Range(1.0, 1024.0));
  sub->add_option("--rope-scale-yarn", o->rope_scale_yarn,
                  "rope.scaling.type yarn with this factor (original context n_ctx / factor)")
      ->check(CLI::Range(1.0, 1024.0));
  sub->add_option("--longrope", o->longrope_orig_ctx,
                  "phi3: LongRoPE factors and attn_factor, with this original context length")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  sub->add_option("--attn-softcap", o->attn_softcap, "gemma2: attention score soft-cap (default 50)")
      ->check(CLI::Range(0.01, 1e6));
  sub->add_option("--final-softcap", o->final_softcap, "gemma2/3: logit soft-cap (gemma2's default 30)")
      ->check(CLI::Range(0.01, 1e6));
  sub->add_flag("--attn-norm-2", o->attn_norm_2,
                "falcon: Falcon-40B's separate attention input norm; jina-bert-v2: attn_norm_2, q and k LayerNorms "
                "and a separate ffn_gate");
  sub->add_option("--experts", o->n_expert,
                  "A mixture of experts with this many experts per layer (llama: Mixtral-like; qwen3moe: required); "
                  "--n-ff is then one expert's width")
      ->check(CLI::Range(int64_t{0}, tc::model::kMaxExperts));
  sub->add_option("--experts-used", o->n_expert_used, "Experts the router picks per token (default 2)")
      ->check(CLI::Range(int64_t{1}, tc::model::kMaxExperts));
  sub->add_option("--expert-gating", o->expert_gating_func,
                  "expert_gating_func: 1 softmax, 2 sigmoid (smallthinker; DeepSeek's form of experts)")
      ->check(CLI::Range(1, 2));
  sub->add_option("--type", o->weight_type, "Weight type")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(profiler::kMakeModelTypes),
                                                     std::end(profiler::kMakeModelTypes))));
  sub->add_flag("--tied-embeddings", o->tied_embeddings, "Omit output.weight (the head reuses token_embd)");
  sub->add_option("--split", o->split_shards,
                  "Write the model as this many shards, as llama.cpp's gguf-split does: OUTPUT without .gguf, then "
                  "-00001-of-0000N.gguf ...")
      ->check(CLI::Range(1, tc::gguf::kMaxShards));
  sub->add_flag("--fim", o->fim_tokens,
                "End the learned vocab with fill-in-the-middle tokens (<|fim_prefix|>, <|fim_suffix|>, "
                "<|fim_middle|>), as code models have");
  sub->add_option("--kv-lora-rank", o->kv_lora_rank,
                  "deepseek2: the cached latent's width (attention.kv_lora_rank; default 2 * head_dim)");
  sub->add_option("--q-lora-rank", o->q_lora_rank,
                  "deepseek2: the compressed query's width (attention.q_lora_rank; default: none, attn_q directly)");
  sub->add_flag("--mla-unsplit", o->mla_unsplit,
                "deepseek2: one attn_kv_b (no attn_k_b / attn_v_b), as files converted before llama.cpp split it; "
                "--n-head-kv equal to --n-head");
  sub->add_flag("--no-scale-keys", o->no_scale_keys,
                "minicpm: write no embedding, residual or logit multiplier keys (files converted before they existed)");
  sub->add_option("--tokenizer", *tokenizer,
                  "Tokenizer: llama (SentencePiece) or gpt2 (byte-level BPE) learned from --vocab-text, or the "
                  "vocab of a model family, qwen2 (151936 tokens), gemma3 or gemma4 (262144), bert (WordPiece, "
                  "30522), xlmr (XLM-RoBERTa-like unigram with a charsmap, 64000), which sets --n-vocab")
      ->check(CLI::IsMember({"llama", "gpt2", "qwen2", "gemma3", "gemma4", "bert", "xlmr"}));
  sub->add_option("--vocab-text", o->vocab_text, "Text to learn the vocabulary from (default: built-in corpus)")
      ->check(CLI::ExistingFile);
  sub->add_option("--chat-template", o->chat_template_file,
                  "Jinja chat template file written as tokenizer.chat_template (default: ChatML)")
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
  sub->add_option("--sparse-overlap", o->sparse.overlap,
                  "Temporal locality: fraction of a token's active neurons also active for the previous token, "
                  "planted through a positional attention head (0: tokens independent)")
      ->check(CLI::Range(0.0, 0.99))
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
    o->vocab_family = profiler::vocab_family_from_name(*tokenizer);
    o->sparse.layout = *layout == "pwri" ? profiler::SparseLayout::PowerInfer : profiler::SparseLayout::Gguf;
    const auto start = std::chrono::steady_clock::now();
    ProgressBar calibrating("calibrating the planted sparsity", "layers");
    if (o->sparse.enabled) {
      o->sparse.calibration_progress = [&calibrating](int64_t done, int64_t total) {
        calibrating.update(static_cast<uint64_t>(done), static_cast<uint64_t>(total));
        if (done == total) calibrating.finish();
      };
    }
    ProgressBar bar("writing " + o->output.filename().string());
    profiler::make_model(*o, [&bar](uint64_t done, uint64_t total) { bar.update(done, total); });
    bar.finish();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto outputs = profiler::make_model_outputs(*o);
    std::string written = outputs.front().string();
    if (outputs.size() > 1) written += " ... " + outputs.back().filename().string();
    std::fprintf(stderr, "wrote %s in %.1f s\n", written.c_str(), secs);
    if (o->sparse.enabled) print_sparse_summary(outputs.front());
    return 0;
  };
}

}  // namespace tc::cli
