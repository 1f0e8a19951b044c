// The model architectures Thermocline runs, one descriptor each in one
// table (architecture.cpp): the GGUF key prefix, which tensors a layer has,
// and the few ways its forward pass differs from llama's, as llama.cpp's
// src/models/*.cpp define them. read_model_spec and map_llama_weights read
// the descriptor; LlamaModel runs every architecture with one forward pass.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kernels/cpu/ops.h"

namespace tc::model {

// How an FFN neuron's activation is formed from its gate and up rows (an
// ungated FFN has only the row the activation is applied to).
enum class FfnForm {
  SwiGLU,  // silu(gate) * up          (LLaMA, Mistral, Qwen, Phi-3)
  ReGLU,   // relu(gate) * up          (ReluLLaMA, ProSparse)
  DReLU,   // relu(gate) * relu(up)    (Bamboo / TurboSparse)
  GeGLU,   // gelu(gate) * up          (Gemma)
  Gelu,    // gelu(up), no gate        (Falcon)
  Relu,    // relu(up), no gate        (ReluFalcon)
  ReluSquared,  // relu(up)^2, no gate  (Arcee AFM)
  SwiGluOai,  // min(gate, 7) * sigmoid(1.702 min(gate, 7)) * (clamp(up, -7, 7) + 1)  (gpt-oss)
};
std::string_view ffn_form_name(FfnForm form);  // "swiglu", "reglu", "drelu", "geglu", "gelu", "relu", "relu2", "swiglu_oai"
bool parse_ffn_form(std::string_view name, FfnForm& out);
// ReLU-family forms have exact zeros, so the sparse FFN can skip neurons.
bool is_relu_family(FfnForm form);
// Whether the FFN has a gate matrix besides up (the gated forms).
bool is_gated(FfnForm form);
kernels::Activation activation_for(FfnForm form);

enum class NormKind {
  Rms,    // RMSNorm with a weight; epsilon {arch}.attention.layer_norm_rms_epsilon
  Layer,  // LayerNorm with a weight and a bias; epsilon {arch}.attention.layer_norm_epsilon
  LayerNoBias,  // LayerNorm with a weight only (Cohere); the same epsilon key
};

// How a layer combines its attention and FFN blocks.
enum class LayerForm {
  Sequential,  // x += attn(norm(x)); x += ffn(ffn_norm(x))
  Parallel,    // n = attn_norm(x); x += ffn(n) + attn(n, or attn_norm_2(x) where present)  (Falcon)
};

// How the file stores the FFN's input matrices.
enum class FfnLayout {
  GateUp,       // ffn_gate and ffn_up, {n_embd, n_ff} each
  FusedGateUp,  // ffn_up {n_embd, 2 n_ff}: gate rows first, then up (Phi-3)
  UpOnly,       // ffn_up {n_embd, n_ff}, ungated (Falcon)
};

// Whether an architecture's FFN is a mixture of experts: a router
// (ffn_gate_inp) picks {arch}.expert_used_count of {arch}.expert_count
// SwiGLU experts per token, stored as 3-D tensors ffn_gate_exps /
// ffn_up_exps / ffn_down_exps.
enum class Experts {
  None,      // a dense FFN only
  Optional,  // dense, or experts where expert_count > 0 (llama: Mixtral); an expert's width is feed_forward_length
  Required,  // experts always (qwen3moe); an expert's width is expert_feed_forward_length
};

// How a mixture of experts weighs the experts it picks (the k largest
// router logits either way).
enum class ExpertGating {
  Softmax,          // their probabilities under a softmax over all experts (Mixtral, Qwen MoE)
  SoftmaxOfChosen,  // a softmax over the k chosen logits only (gpt-oss)
  // Each logit's sigmoid; the k largest sigmoids plus the layer's selection
  // bias (exp_probs_b.bias, where present) are chosen and weighed by their
  // unbiased sigmoids (DeepSeek V3, GLM-4.5).
  Sigmoid,
};

// Sliding-window attention: which layers, and the window.
// Whether a file's {arch}.rope.dimension_sections (multimodal RoPE: one
// position per section, time, height and width of an image's patches) is
// read. Text puts one position in every section, where it is NeoX RoPE
// over the rotated dims (llama.cpp's MROPE and IMROPE rotate NeoX's pairs
// and step the frequencies as NeoX does); the 3-D positions of image
// tokens are not supported.
enum class MultimodalRope {
  Refused,   // the key is an error naming it
  Optional,  // read where present
  Required,  // llama.cpp requires the key: make-model always writes it
};

// BERT's encoder layers (Architecture::bert_layers): how a token's position
// enters.
enum class BertLayers {
  None,      // not BERT's layers
  Absolute,  // position_embd rows added to the token embeddings (bert: MiniLM, bge, mxbai)
  Rotary,    // NeoX RoPE on q and k, no position rows (nomic-bert: nomic-embed-text)
  Alibi,     // ALiBi on the attention scores (ModelSpec::alibi_max_bias), no positions, no RoPE (jina-bert-v2)
};

struct SlidingWindowRule {
  bool enabled = false;  // false: the architecture has none (llama.cpp ignores a window key there)
  // Layer l uses the window when period is 0 or l % period < period - 1
  // (llama.cpp's set_swa_pattern): 2 for Gemma 2 (every other layer), 6 for
  // Gemma 3, 0 for every layer. A file's
  // {arch}.attention.sliding_window_pattern (a period or a per-layer array)
  // overrides it.
  int64_t period = 0;
  // The window when the file has no {arch}.attention.sliding_window: 0 means
  // the architecture uses a window only when the file names one.
  int64_t default_window = 0;
  // Windowed layers take {arch}.rope.freq_base_swa (default 10000) and no
  // frequency scaling (Gemma 3); otherwise the model's RoPE settings.
  bool own_rope = false;
  // Without own_rope: {arch}.rope.freq_base_swa, where present, replaces
  // the windowed layers' base (gpt-oss).
  bool reads_freq_base_swa = false;
  // With reads_freq_base_swa: windowed layers rotate without frequency
  // scaling or YaRN (Olmo 3, whose global layers use YaRN).
  bool plain_rope = false;
  // The first layer of each period is the global one: layer l uses the
  // window when period is 0 or l % period != 0 (llama.cpp's
  // set_swa_pattern(period, dense_first), SmallThinker).
  bool dense_first = false;
  // A file that names a window gets this one whatever its value (llama.cpp
  // sets SmallThinker's to 4096); 0: the file's.
  int64_t fixed_window = 0;
};

struct Architecture {
  std::string_view name;  // general.architecture, also the prefix "{name}." of its keys
  NormKind norm = NormKind::Rms;
  kernels::RopeMode rope_mode = kernels::RopeMode::Normal;
  LayerForm layer_form = LayerForm::Sequential;
  FfnLayout ffn_layout = FfnLayout::GateUp;
  // The FFN forms the architecture allows; the first is the default of GGUF
  // files (thermocline.ffn_form picks another). PowerInfer (PWRI) files
  // default to the first ReLU-family one.
  std::span<const FfnForm> ffn_forms;
  bool fused_qkv_only = false;  // q, k and v only as one attn_qkv (Falcon); else attn_qkv or attn_q/k/v
  bool qk_norm = false;     // attn_q_norm / attn_k_norm f32 [head_dim]: RMSNorm of each head before RoPE
  // With qk_norm: only in files that have the two tensors (GLM-4.5 has
  // them, GLM-4.5-Air has not).
  bool qk_norm_optional = false;
  // With qk_norm: the norms after RoPE, not before (Hunyuan).
  bool qk_norm_after_rope = false;
  // {arch}.rope.scaling.alpha, where present, multiplies the RoPE base by
  // alpha^(head_dim / (head_dim - 2)) (Hunyuan's NTK-aware scaling).
  bool rope_alpha = false;
  // With qk_norm: one RMSNorm over each token's whole q (attn_q_norm f32
  // [n_head * head_dim]) and k (attn_k_norm f32 [n_head_kv * head_dim])
  // instead of one per head (OLMo 2).
  bool qk_norm_whole = false;
  // attn_norm (and ffn_norm in the sequential form) before each block; OLMo 2
  // has none: its blocks read the residual as it is and have post_norms.
  bool pre_norms = true;
  bool post_norms = false;  // post_attention_norm / post_ffw_norm f32 [n_embd]: RMSNorm of each block's output
  // In the parallel form, the FFN reads ffn_norm(x) and attention
  // attn_norm(x), each its own norm (GPT-NeoX), instead of both attn_norm(x).
  bool parallel_ffn_norm = false;
  bool embd_scale = false;  // token embeddings multiplied by sqrt(n_embd)
  bool head_is_token_embd = false;  // the output head is token_embd even where output.weight exists
  SlidingWindowRule sliding_window;
  float attn_softcap = 0.0f;   // default of {arch}.attn_logit_softcapping (0: no key read, no cap)
  float final_softcap = 0.0f;  // default of {arch}.final_logit_softcapping where read (0: none)
  bool reads_final_softcap = false;
  // Gemma's 27B models scale queries by 1/sqrt(n_embd / n_head), not
  // 1/sqrt(head_dim); llama.cpp tells them by this block count (0: never).
  int64_t embd_query_scale_n_layer = 0;
  bool rope_freqs = false;     // may carry rope_freqs.weight f32 [n_rot/2] (Llama 3.1's frequency factors)
  bool longrope = false;       // may carry rope_factors_long/short.weight f32 [n_rot/2] (Phi-3's LongRoPE)
  Experts experts = Experts::None;
  // With experts: their weights renormalised to sum to 1 over the chosen
  // ones (Mixtral, Qwen3), or the softmax's probabilities as they are (Qwen2 MoE).
  bool expert_weights_norm = true;
  // With experts: a shared expert every token runs too, its output times
  // sigmoid(ffn_gate_inp_shexp · x) (Qwen2 MoE).
  bool shared_expert = false;
  // IBM Granite's multipliers: {arch}.embedding_scale (embeddings),
  // residual_scale (each block's output before the residual add),
  // attention.scale (scores, in place of 1/sqrt(head_dim)) and
  // logit_scale (logits divided by it, required).
  bool granite_scales = false;
  // With granite_scales: MiniCPM's multipliers where a file lacks the keys
  // (files converted before they existed): embeddings times 12, block
  // outputs times 1.4 / sqrt(block_count), logits divided by n_embd / 256.
  bool minicpm_scale_defaults = false;
  // Layers without RoPE (NoPE): layer l skips it when (l + 1) % period == 0
  // (SmolLM3: every fourth); 0: every layer rotates.
  int64_t no_rope_period = 0;
  // In a model with a window, only the windowed layers rotate (the global
  // layers of Cohere 2, whose files must name a window, and of EXAONE 4.0
  // 32B have no RoPE).
  bool rope_windowed_only = false;
  // With rope_windowed_only: a file without a window is valid, and every
  // layer rotates (SmallThinker); otherwise such a file is refused.
  bool rope_everywhere_without_window = false;
  // {arch}.logit_scale, where present, multiplies the logits (Cohere).
  bool logit_scale_multiplies = false;
  // A layer tensor llama.cpp reads for this architecture and this engine
  // does not ("attn_q_norm": Command R+'s and StableLM 2 12B's per-head q/k
  // LayerNorms): a file
  // whose layer 0 has it is refused, naming it. Empty: none.
  std::string_view refused_layer_tensor = {};
  // The FFN input norm's tensor name in the sequential form ("ffn_norm";
  // gpt-oss calls it post_attention_norm).
  std::string_view ffn_norm_name = "ffn_norm";
  // Adds blk.N.attn_output.bias where the file has one. ERNIE 4.5: llama.cpp
  // loads it and leaves it out of its graph, and so does this engine.
  bool attn_output_bias = true;
  // attn_sinks f32 [n_head]: a learned logit per head in the softmax (gpt-oss).
  bool attn_sinks = false;
  // attn_gate {n_embd, n_head * head_dim}: the attention's output, before
  // attn_output, times sigmoid(attn_gate · attn_norm(x)) (Arcee AFMoE).
  bool attn_output_gate = false;
  ExpertGating expert_gating = ExpertGating::Softmax;
  // With experts: DeepSeek's form of a mixture (GLM-4.5, dots.llm1). The
  // first {arch}.leading_dense_block_count layers have a dense SwiGLU FFN of
  // feed_forward_length; the others route among experts of
  // expert_feed_forward_length with {arch}.expert_gating_func (1 softmax,
  // 2 sigmoid, 3 softmax of the chosen; absent: expert_gating), the
  // selection bias exp_probs_b.bias f32 [n_expert] where present,
  // expert_weights_norm (default false) and expert_weights_scale, and add
  // expert_shared_count ungated shared experts (one SwiGLU of width
  // expert_feed_forward_length * count). The last
  // {arch}.nextn_predict_layers blocks (multi-token prediction) are skipped.
  bool deepseek_experts = false;
  // DeepSeek's multi-head latent attention (MLA), as llama.cpp runs it
  // absorbed: a compressed latent row per token (attn_kv_a_mqa, then
  // attn_kv_a_norm) cached as the one KV head, queries from attn_q or the
  // low-rank attn_q_a / attn_q_a_norm / attn_q_b, each head's non-rotated
  // part taken into the latent by attn_k_b and its output out of it by
  // attn_v_b (ModelSpec::is_mla).
  bool mla = false;
  // With experts: biases ffn_gate_inp.bias f32 [n_expert] on the router and
  // ffn_{gate,up}_exps.bias f32 {n_ff, n_expert}, ffn_down_exps.bias f32
  // {n_embd, n_expert} on each expert's matmuls (gpt-oss).
  bool expert_biases = false;
  // With experts: the router reads the layer's input, the residual before
  // the attention norm, instead of the FFN's normed input (SmallThinker,
  // whose router runs ahead of attention).
  bool router_reads_layer_input = false;
  // With experts: {arch}.expert_gating_func (1 softmax, 2 sigmoid, 3
  // softmax of the chosen), where present, replaces expert_gating (read
  // with deepseek_experts too).
  bool reads_expert_gating_func = false;
  // Reads {arch}.rope.scaling.yarn_log_multiplier (YaRN's magnitude
  // correction) and attention.temperature_scale (Llama 4's query scaling by
  // position; Mistral 3).
  bool yarn_log_mul_and_temperature = false;
  // A fixed score scale in place of 1/sqrt(head_dim) (Gemma 4: 1, its q
  // norms scale the queries); 0: none.
  float fixed_attn_scale = 0.0f;
  // Gemma 4's layers (ModelSpec::layer_shapes): per-layer head_count_kv and
  // feed_forward_length (arrays), the windowed layers' own head size and
  // rotation (attention.key_length_swa, rope.dimension_count_swa); the
  // last attention.shared_kv_layers layers attend over the cache of the
  // last earlier layer of their kind; values RMS-normed per head without a
  // weight, taken from attn_k's rows where a layer has no attn_v;
  // rope_freqs on the global layers only; per-layer inputs
  // (embedding_length_per_layer_input: per_layer_token_embd,
  // per_layer_model_proj, per_layer_proj_norm, and blk.N.inp_gate, proj,
  // post_norm) and blk.N.layer_output_scale, a scalar times each layer's output.
  // Where expert_count > 0 (26B A4B) every layer adds a mixture beside its
  // dense FFN: post_ffw_norm_1(ffn(ffn_norm(x))) + post_ffw_norm_2(experts(
  // pre_ffw_norm_2(x))), the router reading rms_norm(x) / sqrt(n_embd) *
  // ffn_gate_inp.scale, GeGLU experts of expert_feed_forward_length
  // (ffn_gate_up_exps, or ffn_gate_exps and ffn_up_exps), each expert's
  // output times its ffn_down_exps.scale where present.
  bool gemma4_layers = false;
  // Qwen 3.5's layers: all but every {arch}.full_attention_interval-th
  // (default 4; or where {arch}.attention.recurrent_layers says) run a gated
  // delta net (ModelSpec::delta_net; delta_net_block.h) in place of
  // attention; the attention layers' attn_q is twice as wide, each head's
  // queries then its output gate (the output times sigmoid of it before
  // attn_output); the FFN's input norm is post_attention_norm;
  // the last {arch}.nextn_predict_layers blocks
  // (multi-token prediction) are skipped.
  bool qwen35_layers = false;
  // With qwen35_layers, Qwen3-Next's delta net: value heads share key heads
  // in runs (value head h reads key head h / (n_v_heads / n_k_heads), where
  // qwen35 tiles them, h % n_k_heads); beta and alpha come in one ssm_ba
  // grouped by key head (each group's betas, then its alphas); q, k, v and
  // z in attn_qkv and attn_gate, or in older files one ssm_in grouped by
  // key head (each group's q, k, v, then z).
  bool qwen3next_delta_net = false;
  // Granite 4.0-H (granitehybrid): the layers whose attention.head_count_kv
  // entry is 0 run Mamba-2 (ModelSpec::mamba2; mamba2_block.h) in place of
  // attention; the others attend without RoPE where
  // rope.scaling.finetuned is false (Granite's switch for it).
  bool mamba2_layers = false;
  // LFM2: the layers whose attention.head_count_kv entry is 0 run a gated
  // short convolution (ModelSpec::short_conv_taps; short_conv_block.h) in
  // place of attention; the output norm is token_embd_norm.
  bool short_conv_layers = false;
  // Nemotron-H (nemotron_h): each layer is a single pre-normed block with
  // its residual: Mamba-2 where its attention.head_count_kv and
  // feed_forward_length entries are both 0, attention (without RoPE) where
  // only feed_forward_length is, else the FFN; with mamba2_layers.
  bool single_block_layers = false;
  // Falcon-H1 (falcon-h1): every layer runs Mamba-2 and attention side by
  // side on the same normed input and adds their outputs; then its FFN,
  // whose norm is blk.N.ffn_norm (no .weight, as llama.cpp names it); with
  // mamba2_layers, every layer recurrent.
  bool parallel_mamba2 = false;
  // rope.dimension_sections (MultimodalRope). Where the architecture's own
  // mode is Normal (GLM-4.1V's glm4), sections with a height part make it
  // NeoX, as llama.cpp's use_mrope() does.
  MultimodalRope multimodal_rope = MultimodalRope::Refused;
  // Gemma 3n (gemma3n): the residual is ModelSpec::altup's streams
  // (AltUp; altup_streams.h), of which each layer runs the active one
  // through gemma3's blocks beside a low-rank LAuReL block and corrects the
  // others by what it learned; Gemma 4's per-layer inputs are added to the
  // inactive streams; the first layers' FFN gates keep only their values
  // above mean + 1.645 sd (gaussian_top_k); the layers past the first 20
  // attend over layer 18's (windowed) or 19's cache, values RMS-normed
  // without a weight, as llama.cpp's gemma3n graph.
  bool altup_layers = false;
  // An encoder (EmbeddingGemma's gemma-embedding): attention sees the whole
  // prompt both ways, windowed layers within window / 2 either side
  // (AttentionParams::bidirectional); the model serves embeddings only, a
  // prompt in one step, pooled as pooling_type says, then through the
  // optional dense_2 and dense_3 projections (LlamaModel::project_pooled).
  bool bidirectional = false;
  // Mamba-1 (mamba: Mamba, Falcon-Mamba): with single_block_layers, every
  // layer one Mamba-1 block (ModelSpec::mamba1; mamba1_block.h); without
  // (Jamba), the layers whose attention.head_count_kv entry is 0 run it in
  // place of attention, with learned norms of dt, B and C, and the others
  // attend without RoPE.
  bool mamba1_layers = false;
  // With experts: a layer has them where its ffn_gate_inp exists (Jamba's
  // every other layer), else a dense FFN as wide (ModelSpec::expert_layers).
  bool experts_where_routed = false;
  // BERT's encoders (bert, nomic-bert, jina-bert-v2; with bidirectional): the token
  // embeddings plus token_types' first row (and position_embd's rows where
  // Absolute) through a LayerNorm (token_embd_norm); each block's output
  // added to x, then x LayerNormed (attn_output_norm, layer_output_norm);
  // no output norm, no head.
  BertLayers bert_layers = BertLayers::None;
  // ModernBERT's encoder (modern-bert; with bidirectional): the token
  // embeddings through a LayerNorm (token_embd_norm), pre-norm layers whose
  // first has no attn_norm (identity) where the file has none, an FFN form
  // named by {arch}.hidden_activation (hidden_activation_form), an output
  // norm; no head.
  bool modern_bert_layers = false;
};

// The FFN form of a GLU FFN named by a file's {arch}.hidden_activation, as
// llama.cpp's llm_ffn_op_type_from_string maps it: gelu and geglu GeGLU,
// silu, swish and swiglu SwiGLU, reglu ReGLU, any other name GeGLU. False
// for relu (llama.cpp runs it ungated over both halves: no such file runs).
bool hidden_activation_form(std::string_view name, FfnForm& out);

// The file's short name of the matrix the FFN activation is applied to
// ("ffn_gate"; "ffn_up" for an ungated FFN) and of the norm whose output
// enters the FFN ("ffn_norm"; "attn_norm" in the parallel layer form but
// GPT-NeoX's).
std::string_view ffn_activated_tensor(const Architecture& a);
std::string_view ffn_input_norm_tensor(const Architecture& a);

// The descriptor of `name`, or nullptr when the architecture is not supported.
const Architecture* find_architecture(std::string_view name);
// llama's descriptor (the default of a ModelSpec built by hand).
const Architecture& llama_architecture();
// Every supported architecture, in table order.
std::span<const Architecture> architectures();
// "llama, bamboo, qwen2, ..." for messages.
std::string supported_architecture_names();

}  // namespace tc::model
