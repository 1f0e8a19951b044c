// ModelSpec: the hyperparameters of a model, read from GGUF metadata (the
// keys llama.cpp writes for the architectures of architecture.h, or
// PowerInfer for its `bamboo`), and the check that the file holds every
// tensor the spec needs with the right dtype and shape. Plain data,
// immutable after load.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/architecture.h"

namespace tc::gguf {
class GgufFile;
}

namespace tc::model {

// Metadata key (ours) that names the FFN form; llama.cpp has none. Absent:
// the architecture's first form (Architecture::ffn_forms) for `GGUF` files,
// its first ReLU-family one for PowerInfer `PWRI` files. Only the forms the
// architecture lists are accepted (bamboo: drelu only).
inline constexpr std::string_view kFfnFormKey = "thermocline.ffn_form";

// The most experts per layer a file may declare (DeepSeek V3 has 256).
inline constexpr int64_t kMaxExperts = 1024;

// The architectures of llama's graph that PowerInfer writes (`bamboo`: a
// dReLU llama).
inline constexpr std::string_view kArchLlama = "llama";
inline constexpr std::string_view kArchBamboo = "bamboo";

// The architecture a model of this FFN form is written under: `bamboo` for
// a dReLU model in PowerInfer's layout (PowerInfer computes relu(gate) *
// relu(up) for bamboo only, and relu(gate) * up for llama), else `llama`.
std::string_view architecture_for(FfnForm form, bool powerinfer_layout);

// One layer's attention and FFN widths, where layers differ (Gemma 4: the
// windowed layers' heads are narrower than the global ones', and the
// layers that attend over an earlier layer's cache may have a wider FFN).
struct LayerShape {
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t n_rot = 0;
  int64_t n_ff = 0;      // the dense FFN's width
  int64_t kv_layer = 0;  // the layer whose cached keys and values it attends over (itself unless it shares)
};

// The gated delta net's widths (Qwen 3.5's linear-attention layers,
// Architecture::qwen35_layers), as llama.cpp's qwen35 loader reads them.
struct DeltaNetShape {
  int64_t conv_kernel = 0;  // {arch}.ssm.conv_kernel: taps of the causal convolution
  int64_t n_k_heads = 0;    // {arch}.ssm.group_count: query and key heads
  int64_t n_v_heads = 0;    // {arch}.ssm.time_step_rank: value heads (a multiple of n_k_heads)
  int64_t head_dim = 0;     // {arch}.ssm.state_size: a head's key and value width
  // Qwen3-Next: value heads share key heads in runs (Architecture::qwen3next_delta_net).
  bool grouped_heads = false;
  int64_t key_head(int64_t v_head) const {
    return grouped_heads ? v_head / (n_v_heads / n_k_heads) : v_head % n_k_heads;
  }
  int64_t key_dim() const { return n_k_heads * head_dim; }
  int64_t value_dim() const { return n_v_heads * head_dim; }  // {arch}.ssm.inner_size
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }  // q, k and v rows through the convolution
  // A slot's state per layer, f32 values: the last conv_kernel - 1 inputs
  // of every channel, and every value head's head_dim x head_dim matrix.
  int64_t conv_state_values() const { return (conv_kernel - 1) * conv_dim(); }
  int64_t delta_state_values() const { return n_v_heads * head_dim * head_dim; }
};

// Mamba-2's widths (Granite 4.0-H's recurrent layers; llama.cpp's
// build_mamba2_layer): ssm_in gives z, the convolution's x, B and C, and
// one dt per head.
struct Mamba2Shape {
  int64_t conv_kernel = 0;  // {arch}.ssm.conv_kernel
  int64_t d_inner = 0;      // {arch}.ssm.inner_size: x's and z's width, n_head heads
  int64_t d_state = 0;      // {arch}.ssm.state_size: B's and C's width per group
  int64_t n_head = 0;       // {arch}.ssm.time_step_rank
  int64_t n_group = 0;      // {arch}.ssm.group_count: B/C groups, head h reads group h / (n_head / n_group)
  int64_t head_dim() const { return d_inner / n_head; }
  int64_t conv_dim() const { return d_inner + 2 * n_group * d_state; }  // x, B and C through the convolution
  int64_t in_dim() const { return d_inner + conv_dim() + n_head; }      // ssm_in's rows: z, x B C, dt
  int64_t conv_state_values() const { return (conv_kernel - 1) * conv_dim(); }
  int64_t ssm_state_values() const { return d_inner * d_state; }  // per head: head_dim x d_state
};

// Gemma 3n's AltUp (Architecture::altup_layers), with llama.cpp's
// constants: n_streams residual streams of n_embd (the active one first),
// LAuReL's rank, and the layers whose FFN gates are sparsified.
struct AltUpShape {
  int64_t n_streams = 0;        // {arch}.altup.num_inputs (4); 0: no AltUp
  int64_t laurel_rank = 0;      // laurel_l's rows (64)
  int64_t n_sparse_layers = 0;  // the first 10 layers: gate = relu(gate - (mean + 1.645 sd))
  // The layers that keep a cache of their own: the later ones share layer
  // kv_layers - 2's (windowed) or kv_layers - 1's.
  static constexpr int64_t kKvLayers = 20;
  // The gate cutoff's multiple of the sd: the standard normal's 95th percentile.
  static constexpr float kSparsitySdMultiple = 1.6448533535003662f;
};

// Mamba-1's widths (mamba: Mamba, Falcon-Mamba; llama.cpp's
// build_mamba_layer): ssm_in gives x and z, d_inner each; ssm_x gives dt
// (dt_rank), B and C (d_state each), ssm_dt widens dt to d_inner channels,
// each with its own row of d_state decays (ssm_a) and state.
struct Mamba1Shape {
  int64_t conv_kernel = 0;  // {arch}.ssm.conv_kernel
  int64_t d_inner = 0;      // {arch}.ssm.inner_size (2 n_embd, as llama.cpp requires)
  int64_t d_state = 0;      // {arch}.ssm.state_size
  int64_t dt_rank = 0;      // {arch}.ssm.time_step_rank
  bool dt_b_c_rms = false;  // {arch}.ssm.dt_b_c_rms: dt, B and C RMS-normed, no weight (Falcon-Mamba)
  int64_t conv_state_values() const { return (conv_kernel - 1) * d_inner; }
  int64_t ssm_state_values() const { return d_inner * d_state; }
};

// How RoPE scales positions (llama.cpp's rope.scaling.type).
enum class RopeScaling { None, Linear, LongRope, Yarn };

// How a text's embedding pools the output-normed hidden states of its
// tokens: the last token's (the causal models' own summary), their mean, or
// the first token's (llama.cpp's `cls`). Rank: the first token's through a
// reranker's classification head (LlamaModel::classify): scores, not an
// embedding.
enum class Pooling { Last, Mean, Cls, Rank };
std::string_view pooling_name(Pooling pooling);  // "last", "mean", "cls", "rank"
// "last", "mean" or "cls" (rank is the file's, not a choice); false for anything else.
bool parse_pooling(std::string_view name, Pooling& out);

struct ModelSpec {
  std::string arch;          // `general.architecture`
  const Architecture* architecture = &llama_architecture();  // its descriptor; never null
  std::string name;          // `general.name` (may be empty)
  int64_t n_vocab = 0;       // rows of token_embd
  int64_t n_embd = 0;        // {arch}.embedding_length
  int64_t n_layer = 0;       // {arch}.block_count, less {arch}.nextn_predict_layers where read
  // The FFN's width: {arch}.feed_forward_length; in a mixture of experts
  // one expert's ({arch}.expert_feed_forward_length where the architecture
  // reads it).
  int64_t n_ff = 0;
  // A mixture of experts: {arch}.expert_count experts per layer, of which
  // the router picks {arch}.expert_used_count per token; 0: a dense FFN.
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  bool expert_weights_norm = true;  // the chosen experts' weights renormalised (Architecture::expert_weights_norm)
  ExpertGating expert_gating = ExpertGating::Softmax;  // Architecture::expert_gating, or the file's expert_gating_func
  float expert_weights_scale = 0.0f;  // the chosen experts' weights times this ({arch}.expert_weights_scale); 0: none
  // Architecture::deepseek_experts: layers [0, n_layer_dense_lead) have a
  // dense FFN of width n_ff_dense ({arch}.leading_dense_block_count,
  // feed_forward_length); the others have experts.
  int64_t n_layer_dense_lead = 0;
  int64_t n_ff_dense = 0;
  // Routing within groups (DeepSeek V3): the experts in expert_groups equal
  // groups ({arch}.expert_group_count), a token choosing among those of the
  // expert_groups_used groups ({arch}.expert_group_used_count) whose two
  // best selection scores sum highest; 1 group: none.
  int64_t expert_groups = 1;
  int64_t expert_groups_used = 1;
  // The shared expert's width ({arch}.expert_shared_feed_forward_length,
  // default feed_forward_length; DeepSeek's form: n_ff times
  // expert_shared_count); 0: no shared expert.
  int64_t n_ff_shared = 0;
  int64_t n_head = 0;        // {arch}.attention.head_count
  int64_t n_head_kv = 0;     // {arch}.attention.head_count_kv (default n_head)
  int64_t head_dim = 0;      // {arch}.attention.key_length (default n_embd / n_head)
  int64_t n_rot = 0;         // {arch}.rope.dimension_count (default head_dim)
  // Multi-head latent attention (Architecture::mla; 0 otherwise): the
  // latent's width ({arch}.attention.kv_lora_rank), the compressed query's
  // ({arch}.attention.q_lora_rank; 0: attn_q directly), and a head's query
  // and value widths once decompressed ({arch}.attention.key_length_mla,
  // value_length_mla). head_dim is then the cached row, n_rot rotated
  // values first and the latent after (key_length = kv_lora_rank + n_rot),
  // and n_head_kv is 1.
  int64_t kv_lora_rank = 0;
  int64_t q_lora_rank = 0;
  int64_t head_dim_k_mla = 0;
  int64_t head_dim_v_mla = 0;
  // A file converted before llama.cpp split attn_kv_b into attn_k_b and
  // attn_v_b: its heads' slices are read from attn_kv_b (the file's
  // key_length and value_length are then a head's, and head_count_kv n_head).
  bool mla_kv_b_unsplit = false;
  int64_t n_ctx_train = 0;   // {arch}.context_length
  double rope_freq_base = 10000.0;   // {arch}.rope.freq_base
  // 1 / {arch}.rope.scaling.factor (linear, longrope and yarn; 1 without the factor or with scaling none)
  double rope_freq_scale = 1.0;
  RopeScaling rope_scaling = RopeScaling::Linear;  // {arch}.rope.scaling.type ("linear" when absent, as llama.cpp)
  double rope_attn_factor = 1.0;     // {arch}.rope.scaling.attn_factor (LongRoPE's cos/sin scale)
  int64_t n_ctx_orig = 0;            // {arch}.rope.scaling.original_context_length (default n_ctx_train)
  // YaRN (rope.scaling.type yarn): the ramp's ends in rotations over
  // n_ctx_orig, {arch}.rope.scaling.yarn_beta_fast / _slow (32 and 1 as
  // llama.cpp), and the mix (1 with YaRN, else 0).
  double yarn_beta_fast = 32.0;
  double yarn_beta_slow = 1.0;
  double yarn_ext_factor = 0.0;
  // Queries scaled by 1 + attn_temp_scale * ln(floor(pos / attn_temp_floor) + 1)
  // after RoPE ({arch}.attention.temperature_scale, floor n_ctx_orig; Mistral 3); 0: none.
  double attn_temp_scale = 0.0;
  int64_t attn_temp_floor = 0;
  // No layer rotates (Granite's rope.scaling.finetuned false: Granite 4.0-H's NoPE; Nemotron-H).
  bool no_rope = false;
  // > 0: ALiBi on every layer's attention scores (kernels::AttentionParams::alibi_max_bias; jina-bert-v2's 8).
  float alibi_max_bias = 0.0f;
  // {arch}.rope.dimension_sections where the architecture reads them
  // (MultimodalRope): rotated pairs per section (time, height, width,
  // extra); all 0 without. Text rotates as NeoX whatever they are.
  std::array<int32_t, 4> rope_sections{};
  double rms_eps = 1e-5;  // the norm's epsilon: {arch}.attention.layer_norm_rms_epsilon, or _epsilon for LayerNorm
  FfnForm ffn_form = FfnForm::SwiGLU;
  bool tied_embeddings = false;      // the head reuses token_embd (no output.weight, or the architecture says so)
  bool sparse_layout = false;        // PWRI: ffn_down_t (neuron-major) instead of ffn_down
  // Attention scores: scale (0: 1/sqrt(head_dim)) and soft-cap (0: none).
  float attn_scale = 0.0f;
  float attn_softcap = 0.0f;         // {arch}.attn_logit_softcapping where the architecture caps scores
  float final_softcap = 0.0f;        // {arch}.final_logit_softcapping: logits = cap * tanh(logits / cap)
  float embd_scale = 1.0f;           // token embeddings times this (sqrt(n_embd) for Gemma; Granite's embedding_scale)
  float residual_scale = 0.0f;       // each block's output times this before the residual add (Granite); 0: none
  float logit_multiplier = 0.0f;     // logits times this (Cohere's logit_scale, 1 / Granite's); 0: none
  // {arch}.pooling_type, llama.cpp's numbering: 1 mean, 2 cls, 3 last, 4
  // rank (an encoder's: a reranker's head); absent or 0 (none): last.
  Pooling pooling = Pooling::Last;
  // A reranker's classification head (cls.output.weight's rows, or
  // jina-bert-v2's cls.weight's: one score per label;
  // {arch}.classifier.output_labels names them); 0: none.
  int64_t n_cls_out = 0;
  // Qwen3-Reranker's form of Rank (qwen3, qwen3vl with pooling_type 4, as
  // llama.cpp): the last token's output-normed row through cls.output (the
  // head's "yes" and "no" rows), then a softmax; score = P(yes).
  bool rank_by_last_token = false;
  // The rows Rank pools before the head, as llama.cpp: the first token's
  // (Cls), Qwen3-Reranker's last (Last), ModernBERT's mean (Mean).
  Pooling rank_rows() const;
  // Sliding-window attention: the window ({arch}.attention.sliding_window)
  // and which layers use it (empty: none).
  int64_t n_swa = 0;
  std::vector<bool> swa_layers;      // [n_layer] or empty
  double rope_freq_base_swa = 10000.0;  // the windowed layers' RoPE base ({arch}.rope.freq_base_swa where read)
  double rope_freq_scale_swa = 1.0;

  // Architecture::gemma4_layers: each layer's shape (the fields above are
  // then the global layers': head_dim, n_head_kv and n_rot, and n_ff the
  // widest); empty: every layer has those above. Gemma 4's per-layer
  // inputs' width ({arch}.embedding_length_per_layer_input; 0: none).
  std::vector<LayerShape> layer_shapes;
  int64_t n_embd_per_layer = 0;
  AltUpShape altup;  // Gemma 3n's streams (Architecture::altup_layers); n_streams 0 otherwise

  // Qwen 3.5 (Architecture::qwen35_layers): the layers that run the gated
  // delta net in place of attention ([n_layer]; they cache no keys or
  // values but a recurrent state per slot), and its widths. Empty: none.
  // Granite 4.0-H (Architecture::mamba2_layers): the layers whose
  // head_count_kv is 0 run Mamba-2 (mamba2) in their place.
  std::vector<bool> recurrent_layers;
  DeltaNetShape delta_net;
  Mamba2Shape mamba2;
  bool runs_mamba2() const { return mamba2.d_inner > 0; }
  Mamba1Shape mamba1;  // Architecture::mamba1_layers; d_inner 0 otherwise
  bool runs_mamba1() const { return mamba1.d_inner > 0; }
  // Falcon-H1 (Architecture::parallel_mamba2): every layer recurrent and attending too.
  bool attends_beside_mamba2 = false;
  // LFM2 (Architecture::short_conv_layers): the short convolution's taps
  // ({arch}.shortconv.l_cache) in its layers whose head_count_kv is 0.
  int64_t short_conv_taps = 0;
  // A recurrent layer's state per slot, f32 values: the convolution's last
  // inputs, then the delta net's or Mamba-2's state matrices.
  int64_t recurrent_conv_values() const {
    if (short_conv_taps > 0) return (short_conv_taps - 1) * n_embd;
    if (runs_mamba1()) return mamba1.conv_state_values();
    return runs_mamba2() ? mamba2.conv_state_values() : delta_net.conv_state_values();
  }
  int64_t recurrent_matrix_values() const {  // none for the short convolution
    if (short_conv_taps > 0) return 0;
    if (runs_mamba1()) return mamba1.ssm_state_values();
    return runs_mamba2() ? mamba2.ssm_state_values() : delta_net.delta_state_values();
  }
  bool is_recurrent(int64_t layer) const {
    return !recurrent_layers.empty() && recurrent_layers[static_cast<size_t>(layer)];
  }
  bool has_recurrent_layers() const { return !recurrent_layers.empty(); }
  // Nemotron-H (Architecture::single_block_layers): each layer is one block,
  // attention, Mamba-2 or the FFN. Empty: every layer has both.
  std::vector<bool> mixerless_layers;  // the FFN only: no attention (nor Mamba-2), no cache
  std::vector<bool> ffnless_layers;    // attention or Mamba-2 only
  bool has_mixer(int64_t layer) const {
    return mixerless_layers.empty() || !mixerless_layers[static_cast<size_t>(layer)];
  }
  bool has_ffn(int64_t layer) const { return ffnless_layers.empty() || !ffnless_layers[static_cast<size_t>(layer)]; }

  // The shape of `layer`: its own, or the model's where layers do not differ.
  LayerShape shape(int64_t layer) const {
    if (!layer_shapes.empty()) return layer_shapes[static_cast<size_t>(layer)];
    return {n_head_kv, head_dim, n_rot, dense_ffn_width(), layer};
  }
  bool layers_differ() const { return !layer_shapes.empty(); }
  // Whether `layer` attends over an earlier layer's cache and caches nothing itself.
  bool shares_kv(int64_t layer) const { return shape(layer).kv_layer != layer; }
  int64_t n_embd_q(int64_t layer) const { return n_head * shape(layer).head_dim; }
  int64_t n_embd_kv(int64_t layer) const {  // 0 for a recurrent layer or one without attention
    if ((is_recurrent(layer) && !attends_beside_mamba2) || !has_mixer(layer)) return 0;
    const LayerShape l = shape(layer);
    return l.n_head_kv * l.head_dim;
  }
  // The widest layer's q, k and FFN rows (workspace sizes).
  int64_t widest_n_embd_q() const;
  int64_t widest_n_embd_kv() const;
  int64_t widest_n_ff() const;

  int64_t n_embd_q() const { return n_head * head_dim; }   // width of q and of attn_output's input
  bool is_mla() const { return kv_lora_rank > 0; }
  // Cached matrices per layer: keys and values, or under MLA the latent rows that are both.
  int64_t n_kv_matrices() const { return is_mla() ? 1 : 2; }
  // The width of attn_output's input: n_embd_q(), or under MLA the heads' decompressed values.
  int64_t n_embd_attn_out() const { return is_mla() ? n_head * head_dim_v_mla : n_embd_q(); }
  int64_t n_embd_kv() const { return n_head_kv * head_dim; }
  int64_t n_gqa() const { return n_head / n_head_kv; }
  bool has_experts() const { return n_expert > 0; }
  // Whether `layer`'s FFN is the mixture (not one of the leading dense layers).
  // Architecture::experts_where_routed: the layers with experts ([n_layer]); empty: from n_layer_dense_lead on.
  std::vector<bool> expert_layers;
  bool layer_has_experts(int64_t layer) const {
    if (!has_experts()) return false;
    return expert_layers.empty() ? layer >= n_layer_dense_lead : expert_layers[static_cast<size_t>(layer)];
  }
  // The width of the dense FFN of the layers that have one.
  int64_t dense_ffn_width() const { return n_layer_dense_lead > 0 ? n_ff_dense : n_ff; }
  // How RoPE pairs dims: the architecture's mode, or NeoX where the file's
  // sections have a height part (GLM-4.1V's glm4, as llama.cpp's use_mrope()).
  kernels::RopeMode rope_mode() const {
    const bool multimodal = rope_sections[0] > 0 && rope_sections[1] > 0;
    return multimodal ? kernels::RopeMode::Neox : architecture->rope_mode;
  }
  bool is_swa(int64_t layer) const { return !swa_layers.empty() && swa_layers[static_cast<size_t>(layer)]; }
};

// Reads and validates the spec. Throws ModelLoadError naming the key when
// the architecture is not supported, or a required key is missing, has the
// wrong type, or is inconsistent (n_head not a multiple of n_head_kv, ...).
ModelSpec read_model_spec(const gguf::GgufFile& file);

// Checks that every tensor the spec needs is present with the expected shape
// and a supported weight dtype (norms and biases f32). Throws ModelLoadError
// naming the first tensor at fault and the expected shape.
void validate_model_tensors(const gguf::GgufFile& file, const ModelSpec& spec);

// Names of the per-layer tensors, as llama.cpp spells them.
std::string layer_tensor_name(int64_t layer, std::string_view tensor);  // "blk.3.attn_q.weight"

}  // namespace tc::model
