// The CPU ops of the forward pass other than matmul: embedding lookup,
// RMSNorm and LayerNorm, RoPE, attention over an f16 or q8_0 KV cache, FFN
// activations, and the element-wise bias add, scale and soft-cap.
// All f32 in and out unless stated. Pure functions of their arguments;
// those taking a ThreadPool use its threads and must be called from one
// thread at a time. Deterministic for any thread count.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/cpu/thread_pool.h"
#include "kernels/tensor.h"

namespace tc::kernels {

// out[t, :] = dequantized row ids[t] of `table` (ne = {n_embd, n_vocab}, any
// weight dtype). out: f32 [n_tokens, n_embd]. ids must be < n_vocab.
void get_rows(const Tensor& table, const int32_t* ids, int64_t n_tokens, float* out);

// y[t, :] = x[t, :] / sqrt(mean(x[t, :]^2) + eps) * weight[:]
// x, y: f32 [n_rows, n]; weight: f32 [n]. y may alias x.
void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n, float eps, float* y);

// LayerNorm: y[t, :] = (x[t, :] - mean) / sqrt(var + eps) * weight[:] + bias[:],
// mean and (biased) variance over the row. x, y: f32 [n_rows, n]; weight,
// bias: f32 [n], bias null for none. y may alias x.
void layer_norm(const float* x, const float* weight, const float* bias, int64_t n_rows, int64_t n, float eps,
                float* y);

// Which dimensions of a head RoPE rotates together.
enum class RopeMode {
  Normal,  // pairs (2i, 2i + 1): llama.cpp's LLAMA_ROPE_TYPE_NORM (llama)
  Neox,    // pairs (i, i + n_rot/2): LLAMA_ROPE_TYPE_NEOX (qwen2, qwen3, phi3, gemma, falcon)
};

struct RopeParams {
  int64_t n_rot = 0;          // rotated dims per head (even, <= head_dim); the rest pass through
  double freq_base = 10000.0;
  double freq_scale = 1.0;    // linear scaling: position * freq_scale
  RopeMode mode = RopeMode::Normal;
  // f32 [n_rot / 2] in memory the backend reads, or null: pair i's angle is
  // divided by freq_factors[i] (Llama 3.1's rope_freqs, Phi-3's LongRoPE
  // factors). Not owned.
  const float* freq_factors = nullptr;
  double attn_factor = 1.0;   // cos and sin are scaled by it (LongRoPE's magnitude correction)
  // YaRN (ggml's rope_yarn), on where ext_factor != 0: pair i's angle mixes
  // the interpolated one (times freq_scale) and the unscaled one,
  // theta = theta_unscaled * (freq_scale * (1 - mix) + mix) with
  // mix = ramp(i) * ext_factor, where ramp(i) = 1 - clamp((i - corr_low) /
  // max(0.001, corr_high - corr_low), 0, 1); cos and sin are also scaled by
  // 1 + 0.1 ln(1 / freq_scale). corr_low and corr_high: yarn_corr_dims().
  double ext_factor = 0.0;
  double corr_low = 0.0;
  double corr_high = 0.0;
};

// The pairs where YaRN's ramp starts and ends (ggml_rope_yarn_corr_dims): the
// pair whose wavelength makes beta_fast (beta_slow) turns over n_ctx_orig,
// floored (ceiled) and clamped to [0, n_rot - 1]. In f32 as ggml computes them.
void yarn_corr_dims(int64_t n_rot, int64_t n_ctx_orig, double freq_base, double beta_fast, double beta_slow,
                    double& corr_low, double& corr_high);

// RoPE as llama.cpp's ggml_rope_ext, in place: for each token
// t, head h and pair i < n_rot/2 (dims (2i, 2i+1) in Normal mode, (i,
// i + n_rot/2) in Neox mode) the pair is rotated by
// theta = positions[t] * freq_scale * freq_base^(-2i / n_rot) / freq_factors[i]
// and scaled by attn_factor (and YaRN's ramp and scale where ext_factor is
// set). x: f32 [n_tokens, n_head, head_dim].
void rope(float* x, int64_t n_tokens, int64_t n_head, int64_t head_dim, const int32_t* positions,
          const RopeParams& params);

// How an attention layer scores: scale, soft-cap and window.
struct AttentionParams {
  float scale = 0.0f;    // score = q.k * scale; 0: 1 / sqrt(head_dim)
  float softcap = 0.0f;  // > 0: score = softcap * tanh(score / softcap) (Gemma 2), after the scale
  int64_t window = 0;    // > 0: a token at position p sees positions (p - window, p] only (sliding window)
  // f32 [n_head] or null: attention sinks (gpt-oss), one learned logit per
  // head that joins the softmax's denominator and adds no value:
  // softmax over (scores..., sink), the sink's share dropped. Host memory.
  const float* sinks = nullptr;
  // The cache's element types (is_kv_dtype): F16, or Q8_0 (llama.cpp's
  // block_q8_0: an f16 scale and 32 int8 values per block, 34 bytes; head_dim
  // a multiple of 32). A Q8_0 value enters the arithmetic as its exact f32
  // value q * d, so the bits are those of an f16 cache holding the same
  // values wherever both could.
  DType k_type = DType::F16;
  DType v_type = DType::F16;
  // An encoder's attention (EmbeddingGemma): a token at position p sees
  // every cache position, or with window those in [p - window / 2,
  // p + window / 2] (llama.cpp's symmetric window). CPU backend only.
  bool bidirectional = false;
  // > 0: ALiBi (jina-bert-v2), as ggml_soft_max_ext's max_bias: head h's
  // score at a token in position p for cache position j gets
  // alibi_slope(alibi_max_bias, n_head, h) * -|p - j| added after the
  // soft-cap. 0: none. CPU backend only.
  float alibi_max_bias = 0.0f;
};

// Head h's ALiBi slope in f32 as ggml's soft_max computes it from max_bias:
// with n2 = 2^floor(log2(n_head)), m0 = 2^(-max_bias / n2), m1 =
// 2^(-max_bias / 2 / n2): m0^(h + 1) for h < n2, else m1^(2 (h - n2) + 1).
float alibi_slope(float max_bias, int64_t n_head, int64_t h);

// The element types a KV cache may have.
constexpr bool is_kv_dtype(DType type) { return type == DType::F16 || type == DType::Q8_0; }

// A KV cache's element types, of its keys and of its values.
struct KvCacheTypes {
  DType k = DType::F16;
  DType v = DType::F16;
  bool operator==(const KvCacheTypes&) const = default;
};

// Causal grouped-query attention of one sequence over its KV cache.
// q:   f32 [n_tokens, n_head, head_dim]; token t sits at position positions[t]
//      and attends to cache positions 0..positions[t] inclusive (within
//      params.window of it when that is set).
// k, v: [n_kv, n_head_kv, head_dim] (rows of n_head_kv*head_dim values) of
//      params.k_type and params.v_type, the cache of this sequence holding
//      positions 0..n_kv-1; row bytes row_bytes(type, n_head_kv*head_dim).
// out: f32 [n_tokens, n_head * head_dim]. Head h reads KV head h / (n_head / n_head_kv).
// Scores are scaled (and soft-capped) as params says; softmax in f32 with max subtraction.
void attention(const float* q, const void* k, const void* v, int64_t n_tokens, int64_t n_kv,
               int64_t n_head, int64_t n_head_kv, int64_t head_dim, const int32_t* positions, float* out,
               const AttentionParams& params, ThreadPool& pool);

// One sequence of an attention_batch call: the arguments of attention().
struct AttentionSequence {
  const float* q;            // f32 [n_tokens, n_head, head_dim]
  const void* k;             // [n_kv, n_head_kv, head_dim] of AttentionParams::k_type
  const void* v;             // [n_kv, n_head_kv, head_dim] of AttentionParams::v_type
  int64_t n_tokens;
  int64_t n_kv;
  const int32_t* positions;  // i32 [n_tokens]
  float* out;                // f32 [n_tokens, n_head * head_dim]
};

// attention() of several sequences (each over its own cache) as one job for
// the pool: a decode step of many sequences wakes the threads once per
// layer, not once per sequence. Each output has the bits attention() gives.
void attention_batch(std::span<const AttentionSequence> sequences, int64_t n_head, int64_t n_head_kv,
                     int64_t head_dim, const AttentionParams& params, ThreadPool& pool);

// gelu is the tanh approximation, as ggml_gelu:
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
enum class Activation {
  SwiGLU,  // silu(gate) * up
  ReGLU,   // relu(gate) * up
  DReLU,   // relu(gate) * relu(up)
  GeGLU,   // gelu(gate) * up          (Gemma)
  Gelu,    // gelu(gate), up unused    (ungated: Falcon)
  Relu,    // relu(gate), up unused    (ungated: ReluFalcon)
  ReluSquared,  // relu(gate)^2, up unused (ungated: Arcee AFM)
  // gpt-oss's clamped SwiGLU (ggml_swiglu_oai, alpha 1.702, limit 7):
  // g = min(gate, 7), u = clamp(up, -7, 7), g * sigmoid(1.702 g) * (u + 1).
  SwiGluOai,
};

// Whether the activation reads `up` (a gated FFN) or only `gate`.
constexpr bool is_gated(Activation act) {
  return act != Activation::Gelu && act != Activation::Relu && act != Activation::ReluSquared;
}

// out[i] = act(gate[i], up[i]) for i < n. out may alias gate. up may be
// null for the ungated activations.
void ffn_activation(Activation act, const float* gate, const float* up, int64_t n, float* out);

// y[r, :] += bias[:] for r < n_rows. y: f32 [n_rows, n]; bias: f32 [n].
void add_bias(float* y, const float* bias, int64_t n_rows, int64_t n);

// x[i] *= s for i < n, in place.
void scale(float* x, int64_t n, float s);

// x[i] = cap * tanh(x[i] / cap) for i < n, in place (logit soft-capping); cap > 0.
void softcap(float* x, int64_t n, float cap);

// dst[i] = f16(src[i]) (round to nearest even), for writing the KV cache.
void store_f16(const float* src, int64_t n, uint16_t* dst);

// n_rows rows of row_len values of src written to the KV cache at dst as
// `type` (is_kv_dtype), row_bytes(type, row_len) bytes a row: F16 as
// store_f16; Q8_0 as llama.cpp's quantize_row_q8_0_ref (d = max |x| / 127,
// q = round(x / d)), except that a block holding a NaN or an infinity
// stores d = NaN and q = 0, so that it reads back as NaN as an f16 cache
// would (its q would otherwise be undefined).
void store_kv(const float* src, int64_t n_rows, int64_t row_len, DType type, void* dst);

}  // namespace tc::kernels
