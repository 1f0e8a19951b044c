// The CPU ops of the llama forward pass other than matmul: embedding
// lookup, RMSNorm, RoPE, attention over an f16 KV cache, FFN activations.
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

struct RopeParams {
  int64_t n_rot = 0;          // rotated dims per head (even, <= head_dim); the rest pass through
  double freq_base = 10000.0;
  double freq_scale = 1.0;    // linear scaling: position * freq_scale
};

// llama.cpp's normal RoPE mode, in place: for each token t, head h and
// pair i < n_rot/2, (x[2i], x[2i+1]) is rotated by
// theta = positions[t] * freq_scale * freq_base^(-2i / n_rot).
// x: f32 [n_tokens, n_head, head_dim].
void rope(float* x, int64_t n_tokens, int64_t n_head, int64_t head_dim, const int32_t* positions,
          const RopeParams& params);

// Causal grouped-query attention of one sequence over its KV cache.
// q:   f32 [n_tokens, n_head, head_dim]; token t sits at position positions[t]
//      and attends to cache positions 0..positions[t] inclusive.
// k, v: f16 [n_kv, n_head_kv, head_dim] (rows of n_head_kv*head_dim), the
//      cache of this sequence holding positions 0..n_kv-1.
// out: f32 [n_tokens, n_head * head_dim]. Head h reads KV head h / (n_head / n_head_kv).
// Scores are scaled by 1/sqrt(head_dim); softmax in f32 with max subtraction.
void attention(const float* q, const uint16_t* k, const uint16_t* v, int64_t n_tokens, int64_t n_kv,
               int64_t n_head, int64_t n_head_kv, int64_t head_dim, const int32_t* positions, float* out,
               ThreadPool& pool);

// One sequence of an attention_batch call: the arguments of attention().
struct AttentionSequence {
  const float* q;            // f32 [n_tokens, n_head, head_dim]
  const uint16_t* k;         // f16 [n_kv, n_head_kv, head_dim]
  const uint16_t* v;         // f16 [n_kv, n_head_kv, head_dim]
  int64_t n_tokens;
  int64_t n_kv;
  const int32_t* positions;  // i32 [n_tokens]
  float* out;                // f32 [n_tokens, n_head * head_dim]
};

// attention() of several sequences (each over its own cache) as one job for
// the pool: a decode step of many sequences wakes the threads once per
// layer, not once per sequence. Each output has the bits attention() gives.
void attention_batch(std::span<const AttentionSequence> sequences, int64_t n_head, int64_t n_head_kv,
                     int64_t head_dim, ThreadPool& pool);

enum class Activation {
  SwiGLU,  // silu(gate) * up
  ReGLU,   // relu(gate) * up
  DReLU,   // relu(gate) * relu(up)
};

// out[i] = act(gate[i], up[i]) for i < n. out may alias gate.
void ffn_activation(Activation act, const float* gate, const float* up, int64_t n, float* out);

// dst[i] = f16(src[i]) (round to nearest even), for writing the KV cache.
void store_f16(const float* src, int64_t n, uint16_t* dst);

}  // namespace tc::kernels
