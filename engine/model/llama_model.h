// LlamaModel: the forward pass of every architecture of architecture.h
// (llama's graph with each architecture's few variations) on a Backend. One step runs several sequences at once: their
// tokens are concatenated for the matmuls, and each attends over its own KV
// cache slot. Prefill chunks and single-token decodes mix freely.
// Owns its workspace (grown to the largest step seen, so the steady-state
// decode loop does not allocate). Not thread-safe: the engine thread's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/sparsity_setting.h"
#include "engine/model/altup_streams.h"
#include "engine/model/recurrent_mixer.h"
#include "engine/model/hybrid_ffn_block.h"
#include "engine/model/llama_weights.h"
#include "engine/model/placed_weights.h"
#include "engine/model/prompt_image.h"
#include "engine/model/sparse_ffn_block.h"
#include "engine/model/transposed_down.h"
#include "engine/model/loaded_model.h"
#include "engine/model/mla_attention.h"
#include "engine/model/moe_ffn_block.h"
#include "engine/model/per_layer_inputs.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"
#include "kernels/cpu/q4_lanes16.h"

namespace tc::model {

// One sequence's part of a step: `tokens` go to positions kv.n_used(slot)...
struct StepSequence {
  int slot = 0;
  std::span<const text::TokenId> tokens;
  bool all_logits = false;   // logits for every token, not only the last
  // The tokens were generated (a decode step), not read from a prompt: in
  // FfnMode::Sparse they always run the sparse FFN; prompt tokens run it
  // only in chunks of up to ForwardOptions::sparse_max_tokens.
  bool generated = false;
  // Embeddings instead of logits: the same rows (the last token's, or every
  // token's with all_logits) come back as the output-normed hidden state,
  // f32 [rows, n_embd], in forward()'s `embeddings`.
  bool embeddings = false;
  // The images whose placeholder ids (prompt_image.h) appear in `tokens`:
  // their rows stand in for the token embeddings there.
  std::span<const PromptImage> images = {};
};

// The inputs of a layer's linear projections, in forward order.
enum class LinearInput {
  AttnQkv,     // f32 [n_tokens, n_embd]: attn_norm(x), entering attn_q/k/v
  AttnOutput,  // f32 [n_tokens, n_embd_q]: the attention heads' output, entering attn_output
  FfnGateUp,   // f32 [n_tokens, n_embd]: ffn_norm(x), entering ffn_gate/up
  FfnDown,     // f32 [n_tokens, n_ff]: the FFN activation, entering ffn_down
};
inline constexpr int kLinearInputCount = 4;
std::string_view linear_input_name(LinearInput site);  // "attn_qkv", "attn_output", "ffn_gate_up", "ffn_down"

// Sees activations during forward(): what activation profiling, predictor
// training and TEAL calibration record. Called on the engine thread,
// synchronously; the pointers are valid only during the call (host memory
// on the CPU backend; a device backend will have to copy them out first).
// Rows are the step's tokens in order (sequences concatenated).
// Firing definitions built on on_ffn: ReGLU fires iff gate > 0 (relu(gate) > 0),
// dReLU iff gate > 0 and up > 0; SwiGLU has no exact zeros, so a threshold
// on |silu(gate) * up| is the observer's business.
class ForwardObserver {
 public:
  virtual ~ForwardObserver() = default;
  // Once per layer per step, after the gate and up matmuls (dense) and
  // before the activation. Not called for steps that run the sparse FFN.
  // ffn_in: f32 [n_tokens, n_embd], the residual entering the FFN block
  //         (after the attention add, before ffn_norm; the layer input in
  //         the parallel layer form, as PowerInfer's Falcon predictors take);
  // gate:   f32 [n_tokens, n_ff], ffn_gate · ffn_norm(ffn_in), before the activation;
  // up:     f32 [n_tokens, n_ff], ffn_up · ffn_norm(ffn_in); for an ungated
  //         FFN (one matrix, in gate), the same pointer as gate.
  virtual void on_ffn(int64_t layer, int64_t n_tokens, const float* ffn_in, const float* gate,
                      const float* up) = 0;
  // Before each linear input is used (and before an InputSparsifier sees
  // it): x is f32 [n_tokens, n] (n = n_embd, or n_ff for FfnDown).
  virtual void on_linear_input(int64_t /*layer*/, LinearInput /*site*/, int64_t /*n_tokens*/, int64_t /*n*/,
                               const float* /*x*/) {}
};

// Rewrites linear inputs in place before they are used (TEAL-style
// magnitude sparsification: small entries set to exactly 0). Called on the
// engine thread for every layer and site of every step; x is f32
// [n_tokens, n] in host memory on the CPU backend.
class InputSparsifier {
 public:
  virtual ~InputSparsifier() = default;
  virtual void sparsify(int64_t layer, LinearInput site, int64_t n_tokens, int64_t n, float* x) = 0;
};

// How the FFN blocks run.
enum class FfnMode {
  Dense,   // every neuron, every step
  Sparse,  // generated tokens (and short prompt chunks) over the predicted neurons (SparseFfnBlock)
};
std::string_view ffn_mode_name(FfnMode mode);  // "dense", "sparse"

struct ForwardOptions {
  FfnMode ffn_mode = FfnMode::Dense;
  // Prompt chunks (StepSequence::generated false) of at most this many
  // tokens run the sparse FFN too; longer ones, and every chunk when 0, dense.
  // Decided per sequence, so a sequence's path never depends on the others.
  int64_t sparse_max_tokens = config::kDefaultSparseMaxTokens;
  // CPU backend (not hybrid, not layer offload): copy the Q4_0, Q4_1, Q8_0 and
  // Q4_K matrices the dense matmul reads into their lane layouts at load
  // (cpu_repack.h), where the matmul variant wants them under this mode.
  kernels::CpuRepack cpu_repack = kernels::CpuRepack::Auto;
};

enum class StepStatus {
  Ok,
  ContextFull,    // a sequence would run past the KV cache's n_ctx; nothing was changed
  InvalidToken,   // a token id outside [0, n_vocab) and no image placeholder; nothing was changed
};

// Hybrid mode (docs/hybrid.md): the model's backend (a GPU) runs attention,
// norms, predictors, the output head and the hot FFN neurons; `cpu` runs the
// cold ones from host memory, at the same time (HybridFfnBlock).
struct HybridOptions {
  kernels::Backend* cpu = nullptr;  // CPU backend of the cold neurons; not owned, outlives the model; null: not hybrid
  NeuronPlacement placement;        // the hot neurons of every layer
  PrefetchOptions prefetch;         // the VRAM neuron cache and its prefetch thread (docs/hybrid.md); off by default
};

// Layer offload, the llama.cpp-style baseline (docs/hybrid.md "Layer offload
// (the baseline)"): the model's backend (a GPU) runs layers [0,
// n_device_layers) from uploaded weights with their KV cache in its memory;
// `cpu` runs the token embedding lookup (always, as llama.cpp keeps its
// input layer on the CPU), layers [n_device_layers, n_layer) from the mapped
// file, and the output norm and head unless every layer is on the device.
// Only the hidden state (f32 [n_tokens, n_embd]) crosses at each boundary.
struct LayerOffloadOptions {
  kernels::Backend* cpu = nullptr;  // CPU backend of the host layers; not owned, outlives the model; null: not offload
  int64_t n_device_layers = 0;      // k in [0, n_layer]
};

class LlamaModel {
 public:
  // `model` and `backend` must outlive this object. The weights are placed
  // on the backend (CPU: the mapped file itself; CUDA: device copies).
  // FfnMode::Sparse needs a ReLU-family model with predictors (the file's or
  // the stats file's) and throws std::invalid_argument saying what is missing
  // otherwise; on a GGUF (not PWRI) file it builds the neuron-major
  // ffn_down_t in memory first. On a GPU backend the sparse FFN and PWRI
  // files need hybrid mode (`hybrid.cpu` set; FfnMode::Sparse): only the
  // hot neurons' FFN rows are uploaded, and every FFN step, sparse or dense,
  // runs split (std::invalid_argument otherwise, saying so).
  // Layer offload (`offload.cpu` set) needs a device backend, the dense FFN,
  // a GGUF (not PWRI) file and no hybrid placement (std::invalid_argument
  // otherwise); its KV cache must come from make_kv_cache().
  LlamaModel(const LoadedModel& model, kernels::Backend& backend, const ForwardOptions& options = {},
             HybridOptions hybrid = {}, LayerOffloadOptions offload = {});
  ~LlamaModel();

  const ModelSpec& spec() const { return spec_; }
  kernels::Backend& backend() { return backend_; }

  // Runs one step. On Ok, `logits` holds f32 [n_rows, n_vocab]: for each
  // sequence in order, its last token's logits (or every token's when
  // all_logits), and each slot's KV length has grown by its token count.
  // Sequences that ask for embeddings get no logits rows; their rows go to
  // `embeddings` instead, f32 [n_embedding_rows, n_embd] in sequence order
  // (required when any sequence asks: std::invalid_argument otherwise).
  StepStatus forward(std::span<const StepSequence> sequences, runtime::KvCache& kv, std::vector<float>& logits,
                     std::vector<float>* embeddings = nullptr);

  // Hybrid mode: times every later step (docs/hybrid.md, "Where the time
  // goes"), at the cost of timing events on the device's stream and host
  // clock reads; std::invalid_argument when not hybrid.
  HybridStepTimer& enable_time_split();

  // Allocates the buffers of steps of up to max_tokens tokens and
  // max_logit_rows logit rows now, at exactly that size, so that the device
  // memory is what the placement counted (sparse::dense_step_workspace,
  // hybrid_step_workspace) and no serving step allocates. Optional: a
  // larger step grows them (to at least twice the size).
  void reserve_steps(int64_t max_tokens, int64_t max_logit_rows);

  // A KV cache for this model: on its backend, or in layer offload mode
  // split, layers [0, k) on the device and the rest on the CPU backend.
  // Types other than f16 (a q8_0 cache) need the model's attention on the
  // CPU backend (KvCache's std::invalid_argument otherwise, naming it).
  runtime::KvCache make_kv_cache(int n_slots, int64_t n_ctx, kernels::KvCacheTypes types = {});
  // Context shift of one slot (context_shift.h): drops positions [n_keep,
  // n_keep + n_discard) of every layer, moves the rest down and rotates
  // their keys back by n_discard positions (layers that apply RoPE), then
  // sets the slot's length. Works on every backend (keys pass through host
  // memory); n_discard in [1, n_used - n_keep]. std::invalid_argument where
  // context_shift_refusal(spec()) says why not.
  void shift_context(runtime::KvCache& kv, int slot, int64_t n_keep, int64_t n_discard);
  // An encoder's pooled embedding (f32 [n_embd], Architecture::bidirectional)
  // through its dense_2 and dense_3 projections, where the file has them.
  void project_pooled(std::vector<float>& embedding);
  // A reranker's scores (f32 [n_cls_out]) from the first token's row (f32
  // [n_embd], replaced), as llama.cpp's rank pooling: cls and its bias,
  // tanh, then cls.output and its bias (each where the file has it).
  void classify(std::vector<float>& pooled);
  // BERT's inputs (Architecture::bert_layers): x (f32 [n_tokens, n_embd],
  // the token embeddings) plus token_types' row 0 and, for absolute
  // positions, position_embd's rows at `positions`, then LayerNormed.
  // `scratch`: f32 [n_tokens, n_embd].
  void add_bert_inputs(kernels::Backend& b, float* x, const int32_t* positions, int64_t n_tokens, float* scratch);
  // BERT's end of an attention block: x = attn_output_norm(x + attn), or
  // with jina-bert-v2's attn_norm_2 (LayerWeights::attn_out_norm_2)
  // attn_norm_2(attn_output_norm(attn + x) + x). attn: f32 [n_tokens, n_embd], overwritten.
  void add_bert_attention(kernels::Backend& b, const LayerWeights& w, float* x, float* attn, int64_t n_tokens);
  // A mixture of experts' block (its routing counts), nullptr for a dense FFN.
  const MoeFfnBlock* moe_ffn() const { return moe_ffn_.get(); }
  // Layer offload: the CPU backend (nullptr otherwise) and k.
  kernels::Backend* offload_cpu() const { return offload_cpu_; }
  int64_t n_device_layers() const { return n_device_layers_; }
  // Bytes of weights copied to the backend at load (0 on the CPU backend).
  size_t device_weight_bytes() const { return device_weight_bytes_; }

  const ForwardOptions& options() const { return options_; }
  // The sparse FFN's counters (nullptr in dense mode); reset by assigning {}.
  SparseFfnCounters* sparse_counters() {
    return hybrid_ffn_ ? &hybrid_ffn_->counters() : sparse_ffn_ ? &sparse_ffn_->counters() : nullptr;
  }
  // Hybrid mode: how many neurons went to the device and to the CPU (nullptr otherwise).
  HybridSplitCounters* hybrid_counters() { return hybrid_ffn_ ? &hybrid_ffn_->split_counters() : nullptr; }
  // Hybrid mode's prefetch path (nullptr when not hybrid or prefetch is off).
  HybridPrefetch* hybrid_prefetch() { return hybrid_ffn_ ? hybrid_ffn_->prefetch() : nullptr; }
  // Hybrid mode's FFN weights: hot rows and cache slots on the device (nullptr when not hybrid).
  // Bytes of Q4_0, Q4_1, Q8_0, Q3_K-Q6_K and IQ4_XS matrices repacked at load for the CPU matmul
  // (cpu_repack.h); 0: none.
  size_t repacked_weight_bytes() const { return repacked_weight_bytes_; }
  const HybridWeights* hybrid_weights() const { return hybrid_ffn_ ? &hybrid_weights_ : nullptr; }
  bool hybrid() const { return hybrid_ffn_ != nullptr; }

  // Installs an observer for later steps (nullptr: none, the default,
  // which costs nothing). Not owned; must outlive its use. CPU backend only
  // (observers read activations in host memory): std::invalid_argument otherwise.
  void set_observer(ForwardObserver* observer);
  // Installs a sparsifier of linear inputs for later steps (nullptr: none,
  // the default). Not owned; must outlive its use. CPU backend only.
  void set_input_sparsifier(InputSparsifier* sparsifier);

 private:
  // The activation buffers of one side (the backend's, or the CPU's in
  // layer offload mode), f32; rows = tokens of the step.
  struct Workspace {
    kernels::Buffer x;         // [T, n_embd] residual stream
    kernels::Buffer cur;       // [T, max(n_embd, n_embd_q)] normed input / attention heads' output
    kernels::Buffer q;         // [T, n_embd_q]
    kernels::Buffer k;         // [T, n_embd_kv]
    kernels::Buffer v;         // [T, n_embd_kv]
    kernels::Buffer ffn_gate;  // [T, n_ff] (not in hybrid mode, which has its own)
    kernels::Buffer ffn_up;    // [T, n_ff]
    kernels::Buffer tmp;       // [T, n_embd] projection outputs before the residual add
    kernels::Buffer ffn_out;   // [T, n_embd] the FFN's output in the parallel layer form (else empty)
  };
  // RoPE frequency factor views (null where the file has none).
  struct RopeFactors {
    kernels::Tensor freqs, factors_short, factors_long;
  };
  void check_layer_offload(const LoadedModel& model, bool hybrid_mode) const;
  // Throws std::invalid_argument where a part that runs on the host only
  // (latent attention, a mixture of experts, a gated attention output)
  // meets a GPU, layer offload, hybrid mode or the sparse FFN; no-op for
  // models without such parts.
  void check_host_only_parts(const LoadedModel& model, bool hybrid_mode) const;
  void reserve_workspace(kernels::Backend& b, Workspace& ws, int64_t t, bool pinned_x);
  void reserve(int64_t n_tokens, int64_t n_logit_rows);
  bool layer_on_device(int64_t layer) const { return offload_cpu_ == nullptr || layer < n_device_layers_; }
  bool head_on_device() const { return offload_cpu_ == nullptr || n_device_layers_ == spec_.n_layer; }
  // Shows a linear input to the observer, then lets the sparsifier rewrite it.
  void prepare_input(int64_t layer, LinearInput site, int64_t n_tokens, int64_t n, float* x);
  // One layer on backend `b` over workspace `ws`; positions: i32 [T] that b can read.
  // horizons: i32 [n_tokens], the last cache position each token attends
  // to (its own position, or a bidirectional image's last; `positions`
  // itself when the step holds no such image).
  void run_layer(kernels::Backend& b, Workspace& ws, const int32_t* positions, const int32_t* horizons,
                 const LayerWeights& w, int64_t layer,
                 std::span<const StepSequence> sequences, runtime::KvCache& kv, int64_t n_tokens);
  // A Gemma 3n layer (gemma3n_layer.cpp; Architecture::altup_layers), in
  // place of run_layer's blocks: ws.x is AltUp's active stream.
  void run_altup_layer(kernels::Backend& b, Workspace& ws, const int32_t* positions, const int32_t* horizons,
                       const LayerWeights& w, int64_t layer, std::span<const StepSequence> sequences,
                       runtime::KvCache& kv, int64_t n_tokens);
  // Qwen 3.5's projections (llama_attention.cpp): q from attn_q's
  // interleaved rows, its output gate into attn_gate_, and k and v.
  void project_gated_q(kernels::Backend& b, const LayerWeights& w, const float* cur, int64_t n_tokens, float* q,
                       float* k, float* v);
  // The attention block of `layer` (llama_attention.cpp): ws.cur, the normed
  // input, to ws.tmp, attn_output's product (ws.cur then holds the heads'
  // output).
  void run_attention(kernels::Backend& b, Workspace& ws, const int32_t* positions, const int32_t* horizons,
                     const LayerWeights& w, int64_t layer, std::span<const StepSequence> sequences,
                     runtime::KvCache& kv, int64_t n_tokens);
  // q f32 [n_tokens, n_embd_q] and k, v f32 [n_tokens, n_embd_kv] from the
  // normed input cur: the projections, biases, q/k norms, RoPE and query
  // temperature of the layer (every architecture's but latent attention).
  void project_qkv(kernels::Backend& b, const LayerWeights& w, int64_t layer, const float* cur, int64_t n_tokens,
                   const int32_t* positions, float* q, float* k, float* v);

  // The FFN block over the step's rows, in runs of sequences that take the
  // same path (dense or sparse): out = FFN(in), in the normed input, f32
  // [T, n_embd] both.
  void run_ffn_runs(kernels::Backend& b, Workspace& ws, const LayerWeights& w, int64_t layer,
                    std::span<const StepSequence> sequences, const float* in, float* out);
  // The FFN over rows [t0, t0 + n) of in and out.
  void run_ffn(kernels::Backend& b, Workspace& ws, const LayerWeights& w, int64_t layer, int64_t t0, int64_t n,
               bool sparse, const float* in, float* out);
  // y = the architecture's norm of x (RMSNorm, or LayerNorm with `bias` where it has one), rows of n_embd.
  // Copies this step's image rows over their tokens' embeddings in x
  // (f32 [n_tokens, n_embd] on b).
  void place_image_rows(kernels::Backend& b, float* x) const;
  void norm(kernels::Backend& b, const float* x, const kernels::Tensor& weight, const kernels::Tensor& bias,
            int64_t n_rows, float* y) const;
  // y = norm(x) before a block, or x as it is where the architecture has no
  // pre-norms (Architecture::pre_norms) or the layer no such weight
  // (ModernBERT's layer 0).
  void pre_norm(kernels::Backend& b, const float* x, const kernels::Tensor& weight, const kernels::Tensor& bias,
                int64_t n_rows, float* y) const;
  // Whether `layer` applies RoPE (no_rope_period, rope_windowed_only).
  bool rotates(int64_t layer) const;
  // RoPE of `layer` run on backend b (its base, scale and frequency factors).
  kernels::RopeParams rope_params(const kernels::Backend& b, int64_t layer) const;
  // The same with the frequency factors of `f` (the host's views: context shift).
  kernels::RopeParams rope_params(const RopeFactors& f, int64_t layer) const;
  // q *= Mistral 3's position-dependent query scale, token by token
  // (ModelSpec::attn_temp_scale), from the step's host positions.
  void scale_queries_by_position(kernels::Backend& b, float* q, int64_t n_tokens) const;
  bool runs_sparse(const StepSequence& s) const;
  // Whether a step of n_tokens may run as a step graph (Backend::begin_graph),
  // and its key there.
  bool step_graph_fits(int64_t n_tokens) const;
  static uint64_t step_graph_key(std::span<const StepSequence> sequences, int64_t n_tokens, int64_t n_logit_rows);
  // Gemma 4's experts beside the dense FFN of `layer` (gemma4_experts.cpp):
  // ffn_out (f32 [n_tokens, n_embd], the dense FFN's output) becomes
  // post_ffw_norm_1(ffn_out) + post_ffw_norm_2(experts(pre_ffw_norm_2(x))).
  void add_gemma4_experts(kernels::Backend& b, const LayerWeights& w, int64_t layer, const float* x, int64_t n_tokens,
                          float* ffn_out);
  // After a step's ops: the sparse FFN's step counts, and each slot's KV length grown by its tokens.
  void finish_step_counts(std::span<const StepSequence> sequences, runtime::KvCache& kv);

  const ModelSpec& spec_;
  ForwardOptions options_;
  LlamaWeights weights_;                          // views the backend's ops read
  std::vector<kernels::Buffer> weight_storage_;   // device copies (GPU backends) or repacked ones (CPU) behind weights_
  std::vector<kernels::Buffer> down_t_storage_;   // ffn_down_t built from ffn_down (sparse mode, GGUF files)
  std::unique_ptr<SparseFfnBlock> sparse_ffn_;     // null in dense and hybrid mode
  std::unique_ptr<MoeFfnBlock> moe_ffn_;           // null unless the model is a mixture of experts
  std::unique_ptr<MlaAttention> mla_;              // null unless the model has latent attention
  std::unique_ptr<RecurrentMixer> recurrent_;  // null unless the model has recurrent layers
  std::vector<float> beside_;  // f32 [n_tokens, n_embd]: Falcon-H1's Mamba-2 output beside attention's
  std::vector<float> token_type_row_;  // f32 [n_embd]: BERT's token_types row 0 (filled on first use)
  std::vector<RecurrentSequence> recurrent_sequences_;  // a step's sequences for delta_net_
  std::unique_ptr<PerLayerInputs> per_layer_inputs_;  // null unless the model has Gemma 4's per-layer inputs
  std::unique_ptr<AltUpStreams> altup_;  // null unless Gemma 3n (Architecture::altup_layers)
  // run_altup_layer's rows: LAuReL's output, the FFN's, the per-layer
  // input's gate input (f32 [n_tokens, n_embd] each) and LAuReL's low-rank
  // middle (f32 [n_tokens, laurel_rank]).
  struct AltUpRows {
    std::vector<float> laurel, ffn_out, gate_input, low_rank;
  };
  AltUpRows altup_rows_;
  // f32 [max(widest head_dim, n_embd)] of ones: the weight of Gemma 4's weightless norms.
  std::vector<float> unit_weights_;
  // Gemma 4's mixture (add_gemma4_experts), each f32 [n_tokens, n_embd]:
  // the experts' input, the router's, and the experts' output.
  struct Gemma4ExpertRows {
    std::vector<float> input, router, output;
  };
  Gemma4ExpertRows gemma4_experts_;
  std::vector<kernels::AttentionSequence> attention_sequences_;  // one layer's attention calls, [n_sequences]
  // f32 [n_tokens, n_embd]: the layer's input, kept for a router that reads
  // it (Architecture::router_reads_layer_input; experts run on the host).
  std::vector<float> router_input_;
  // f32 [n_tokens, n_head * head_dim]: attn_gate · attn_norm(x), then its
  // sigmoid (Architecture::attn_output_gate; such models run on the host).
  std::vector<float> attn_gate_;
  // f32 [n_tokens, 2 * n_head * head_dim]: Qwen 3.5's attn_q product, each head's queries then its gate.
  std::vector<float> gated_q_;
  HybridWeights hybrid_weights_;                   // hybrid mode: hot rows on the device, views of the cold ones
  std::unique_ptr<HybridFfnBlock> hybrid_ffn_;     // null unless hybrid mode
  std::unique_ptr<HybridStepTimer> timer_;         // enable_time_split(); null: steps not timed
  TransposedDown transposed_down_;                 // dense down projection of PWRI files
  kernels::Backend& backend_;
  kernels::Activation activation_;
  RopeFactors host_rope_factors_;  // the file's views, for the CPU's layers in layer offload mode
  bool long_context_ = false;      // the step's KV cache is longer than n_ctx_orig (LongRoPE's long factors)
  kernels::Backend* offload_cpu_ = nullptr;  // layer offload: the host layers' backend
  int64_t n_device_layers_ = 0;               // layer offload: k
  size_t device_weight_bytes_ = 0;
  size_t repacked_weight_bytes_ = 0;
  ForwardObserver* observer_ = nullptr;
  InputSparsifier* sparsifier_ = nullptr;

  // Workspace, f32 unless noted; rows = tokens of the step.
  int64_t capacity_tokens_ = 0;
  int64_t capacity_logit_rows_ = 0;
  Workspace ws_;               // on backend_ (unused in layer offload with k = 0)
  Workspace cpu_ws_;           // layer offload: on offload_cpu_, x in backend_.allocate_host() (pinned) memory
  kernels::Buffer ids_;        // i32 [T]
  kernels::Buffer positions_;  // i32 [T]
  kernels::Buffer ids_host_;        // i32 [T] staging for ids_ (allocate_host)
  // This step's image rows: the token's index in the step, its row (f32
  // [n_embd], host memory of the request's PromptImage).
  struct ImageRow {
    int64_t token;
    const float* row;
  };
  std::vector<ImageRow> image_rows_;
  // Attention horizons of a step with a bidirectional image: i32 [T] on the
  // backend and its host staging (sized with positions_).
  kernels::Buffer horizons_, horizons_host_;
  bool step_has_horizons_ = false;
  kernels::Buffer positions_host_;  // i32 [T] staging for positions_
  kernels::Buffer head_in_;    // [R, n_embd] rows that get logits (on the head's side)
  kernels::Buffer logits_dev_; // [R, n_vocab] GPU backends: logits before the copy to the host
  kernels::Buffer logits_host_;  // [R, n_vocab] GPU backends: pinned staging of a step graph's logits
  // [E, n_embd] the rows that come back as embeddings (on the head's side),
  // allocated at the first step that asks for any.
  kernels::Buffer embedding_rows_;
  int64_t capacity_embedding_rows_ = 0;
};

}  // namespace tc::model
