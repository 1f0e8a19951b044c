// make-model: writes a GGUF of any architecture of engine/model/
// architecture.h (llama by default) with seeded random weights (normal,
// never zeros), any dims, GQA, FFN form, weight dtype, the architecture's
// optional parts (biases, fused tensors, sliding windows, RoPE factors,
// soft-caps, a mixture of experts), a tokenizer learned from a text (or a Qwen2- or Gemma3-like
// one), and a chat template; or, with
// `sparse`, a llama ReLU model
// whose FFN activations are truly sparse, with exact predictors, in the GGUF
// or the PowerInfer (PWRI) layout (profiler/sparse_planting.h; a dReLU one
// as PowerInfer's architecture `bamboo`, model::architecture_for). The same
// options give the same bytes, whatever the thread count. Every test model
// in the repo comes from here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iterator>
#include <optional>
#include <string>

#include "engine/model/model_spec.h"
#include "engine/text/vocab.h"
#include "profiler/family_vocab.h"

namespace tc::profiler {

// Where the FFN down projection goes in a sparse model.
enum class SparseLayout {
  Gguf,        // magic GGUF, `ffn_down` [n_ff, n_embd] plus fc1/fc2 (llama.cpp reads it; sparse runs transpose ffn_down at load)
  PowerInfer,  // magic PWRI, `ffn_down_t` [n_embd, n_ff] (row i = neuron i) instead of ffn_down
};

// Planted activation sparsity (docs/synthetic-sparse-models.md). Neuron i of
// every layer fires (gate pre-activation > 0) on a fraction f_i of tokens,
// with f over the neuron ranks a power law of mean `active`, and the file
// carries predictors blk.N.fc1 [n_embd, r] / blk.N.fc2 [r, n_ff] whose score
// fc2 . relu(fc1 . x) has the sign of the gate pre-activation, x being the
// residual stream entering the FFN block (before ffn_norm).
struct SparseOptions {
  bool enabled = false;
  double active = 0.10;          // mean fraction of neurons with gate > 0 per token, in (0.001, 0.99)
  double alpha = 1.0;            // f_i ~ (rank_i + 1)^-alpha, clipped to [0.001, 0.99]; 0: all equal
  int64_t predictor_rank = 0;    // r, even; 0: n_embd / 4 rounded to a multiple of 64 (at least 64)
  SparseLayout layout = SparseLayout::Gguf;
  std::string predictor_type;    // dtype of fc1/fc2; empty: the weight type (q4_k for q4_k_m)
  int64_t calib_tokens = 256;    // tokens of the calibration forward pass (sequences of up to 64)
  // Temporal locality: the fraction of a token's active neurons that were
  // active for the previous token, planted per layer through a positional
  // attention head (profiler/sparse_recency.h); 0: tokens independent.
  double overlap = 0.0;
  // Called after each layer of the calibration pass (layers done, n_layer),
  // which runs before anything is written; empty: silent.
  std::function<void(int64_t done, int64_t total)> calibration_progress;
  // false: no fc1/fc2 in the file (llama.cpp refuses tensors it does not
  // know); every other tensor has the same bytes either way.
  bool write_predictors = true;
};

// The names --type accepts, and the same as one comma-separated string.
inline constexpr const char* kMakeModelTypes[] = {"f32",  "f16",  "bf16", "q8_0", "q4_0",   "q4_1",   "q5_0",
                                                  "q5_1", "q2_k", "q3_k", "q4_k", "q5_k",   "q6_k",   "iq4_nl",
                                                  "iq4_xs", "mxfp4", "q4_k_m", "q5_k_m"};
inline constexpr const char* kMakeModelTypeList =
    "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, mxfp4, q4_k_m, "
    "q5_k_m";

struct MakeModelOptions {
  std::filesystem::path output;
  // The architecture (general.architecture and its keys and tensors, as
  // llama.cpp reads them). Sparse models are llama (or bamboo) only.
  std::string arch = "llama";
  uint64_t seed = 42;
  int64_t n_vocab = 4096;
  int64_t n_embd = 256;
  int64_t n_layer = 4;
  int64_t n_ff = 688;
  int64_t n_head = 8;
  int64_t n_head_kv = 4;
  int64_t n_ctx = 2048;
  double rope_freq_base = 0.0;   // 0: the architecture's usual base (10000; 1e6 for qwen2, qwen3, gemma3)
  double rms_eps = 1e-5;         // the norm epsilon (RMSNorm or LayerNorm)
  int64_t head_dim = 0;          // {arch}.attention.key_length/value_length; 0: n_embd / n_head, keys not written
  int64_t n_rot = 0;             // {arch}.rope.dimension_count (partial RoPE, GLM-4's half); 0: head_dim
  bool attn_bias = false;        // q/k/v biases (qwen2 always has them)
  // {arch}.rope.dimension_sections (multimodal RoPE) where the architecture
  // may have them (glm4, glm4moe, qwen35); the architectures that require
  // them (qwen2vl, qwen3vl, qwen3vlmoe) always get them.
  bool mrope_sections = false;
  bool fused_qkv = false;  // attn_qkv in place of attn_q/k/v (phi3 and falcon always); qwen3next: ssm_in
  // {arch}.attention.sliding_window, for the architectures that read it
  // (llama: every layer; gemma2/3: the windowed layers); 0: not written.
  int64_t sliding_window = 0;
  int64_t swa_pattern = 0;       // {arch}.attention.sliding_window_pattern (a period); 0: not written
  bool rope_freqs = false;       // llama: rope_freqs.weight, frequency factors rising from 1 to 8 (Llama 3.1-like)
  double rope_scale_linear = 0;  // rope.scaling.type linear with this factor; 0: not written
  // rope.scaling.type yarn with this factor, original_context_length
  // n_ctx / factor (as long-context files write it); 0: not written.
  double rope_scale_yarn = 0;
  // phi3: LongRoPE (rope.scaling.type longrope, rope_factors_short/long,
  // attn_factor) with this original context length; 0: none.
  int64_t longrope_orig_ctx = 0;
  float attn_softcap = 0.0f;     // gemma2: {arch}.attn_logit_softcapping; 0: not written (the default, 50)
  float final_softcap = 0.0f;    // gemma2/3: {arch}.final_logit_softcapping; 0: not written
  // gemma4 (make_gemma4.h): the last N layers attend over earlier layers'
  // caches ({arch}.attention.shared_kv_layers), and per-layer inputs of
  // this many values ({arch}.embedding_length_per_layer_input); 0: none.
  int64_t shared_kv_layers = 0;
  int64_t n_embd_per_layer = 0;
  // granitehybrid: Mamba-2's states per group (ssm.state_size; 0: 16).
  int64_t ssm_state = 0;
  // falcon-h1: Mamba-2 without ssm_norm (Falcon-H1's mamba_rms_norm off).
  bool no_ssm_norm = false;
  // mamba: {arch}.ssm.dt_b_c_rms (Falcon-Mamba's weightless norms of dt, B and C).
  bool ssm_dt_b_c_rms = false;
  // bert: a cross-encoder reranker (pooling_type 4, rank): cls and
  // cls.output (one label), as converted BertForSequenceClassification files;
  // qwen3: Qwen3-Reranker's form (cls.output's "yes" and "no" rows, the
  // tokenizer.chat_template.rerank prompt); modern-bert: cls, cls.norm and
  // cls.output (gte-reranker-modernbert's).
  bool reranker = false;
  // modern-bert: {arch}.hidden_activation, written as given (llama.cpp:
  // gelu GeGLU, silu SwiGLU as granite-embedding-small-english-r2, other
  // names GeGLU); empty: gelu.
  std::string hidden_act;
  bool attn_norm_2 = false;      // falcon: Falcon-40B's attn_norm_2 (the attention's own input norm)
  // A mixture of experts (llama: Mixtral's form; qwen3moe: always): n_expert
  // SwiGLU experts of width n_ff per layer, n_expert_used per token, a
  // router ffn_gate_inp (f32). 0: a dense FFN (qwen3moe: 8 experts).
  int64_t n_expert = 0;
  int64_t n_expert_used = 2;
  // {arch}.expert_gating_func (1 softmax, 2 sigmoid) for the architectures
  // that read it; 0: the architecture's usual one (sigmoid for DeepSeek's
  // form but ERNIE's, softmax for SmallThinker).
  int expert_gating_func = 0;
  // SwiGLU, the default, stands for the architecture's first form where it
  // has no SwiGLU (gemma: geglu, falcon: gelu).
  model::FfnForm ffn_form = model::FfnForm::SwiGLU;
  // Type of the 2-D weights (norms stay f32): one of kMakeModelTypes: a
  // weight dtype, or q4_k_m / q5_k_m (llama.cpp's mixes, simplified: q6_k
  // for output, attn_v and ffn_down, q4_k / q5_k elsewhere).
  std::string weight_type = "f16";
  bool tied_embeddings = false;
  // minicpm: none of the multiplier keys, as files converted before they
  // existed (the loader's MiniCPM constants apply).
  bool no_scale_keys = false;
  // deepseek2 (multi-head latent attention): the cached latent's width
  // (attention.kv_lora_rank; 0: 2 * head_dim) and the compressed query's
  // (attention.q_lora_rank; 0: attn_q directly, as V2-Lite). A head's query
  // and value are head_dim wide, its first --rope-dims (default head_dim/2)
  // rotated ones last.
  int64_t kv_lora_rank = 0;
  int64_t q_lora_rank = 0;
  // deepseek2: one attn_kv_b and multi-head keys (head_count_kv n_head, no
  // key_length_mla), as files converted before llama.cpp split it.
  bool mla_unsplit = false;
  text::TokenizerKind tokenizer = text::TokenizerKind::Spm;
  std::filesystem::path vocab_text;   // empty: the corpus shipped in profiler/data
  // Set: the family's vocab (profiler/family_vocab.h, seed 1) instead of one
  // learned for `tokenizer`, `n_vocab` and `vocab_text`; n_vocab becomes its size.
  std::optional<VocabFamily> vocab_family;
  std::filesystem::path chat_template_file;  // empty: ChatML
  // A learned vocab ends with Qwen's fill-in-the-middle tokens
  // (<|fim_prefix|>, <|fim_suffix|>, <|fim_middle|>, control, named by the
  // tokenizer.ggml.fim_* keys) within n_vocab: a small code-model-like file.
  bool fim_tokens = false;
  // > 1: the file is written as this many shards, as llama.cpp's gguf-split
  // does (engine/gguf/gguf_split.h): OUTPUT minus ".gguf", then
  // "-00001-of-0000N.gguf" ...; `output` itself is not kept.
  int split_shards = 1;
  float weight_scale = 0.0f;          // sd of weights; 0: 1/sqrt(fan_in)
  std::string name = "thermocline-random";
  int n_threads = 0;                  // 0: hardware concurrency
  SparseOptions sparse;               // enabled: a synthetic sparse ReLU model (reglu or drelu)
};

// Progress callback: bytes written so far, total.
using MakeModelProgress = std::function<void(uint64_t done, uint64_t total)>;

// The files make_model writes for `options`: `output`, or its shards.
std::vector<std::filesystem::path> make_model_outputs(const MakeModelOptions& options);

// Throws std::invalid_argument for inconsistent options (n_embd % n_head,
// n_head % n_head_kv, a row length not a multiple of the dtype's block, a
// sparse model with SwiGLU, an option the architecture has no key or
// tensor for...).
void make_model(const MakeModelOptions& options, const MakeModelProgress& progress = {});

}  // namespace tc::profiler
