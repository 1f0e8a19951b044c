// MlaAttention: DeepSeek's multi-head latent attention (Architecture::mla)
// on the CPU backend, in llama.cpp's absorbed form, around the engine's
// ordinary attention: every token caches one latent row (kv_lora_rank
// normed values of attn_kv_a_mqa · x, with k's n_rot rotated values),
// which is both the one KV head's key and its value, and each query head
// is taken into the latent's space:
//   q_h = [rope(q_pe_h), attn_k_b_h · q_nope_h]   (head_dim = n_rot + kv_lora_rank)
//   k = v = [rope(k_pe), kv_a_norm(c_kv)]
//   out_h = attn_v_b_h · (attention's head h output, its latent part)
// The rotated part comes first here (llama.cpp puts it last): the same
// dot products, and the ordinary RoPE call rotates it in place. Scores
// are scaled by ModelSpec::attn_scale (mscale^2 / sqrt(head_dim_k_mla)).
// Files with one attn_kv_b (ModelSpec::mla_kv_b_unsplit) hold each head's
// k slice untransposed; the absorption then sums its rows weighted by
// q_nope (Backend::axpy_rows) instead of a matmul: the same product.
// Owns its workspace, grown to the largest step seen. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "kernels/backend.h"

namespace tc::model {

class MlaAttention {
 public:
  // `spec` (MLA) and `backend` (the CPU's) must outlive the block.
  MlaAttention(const ModelSpec& spec, kernels::Backend& backend);

  // From the normed input `in` f32 [n_tokens, n_embd] of layer weights `w`:
  // q f32 [n_tokens, n_head, head_dim] and kv f32 [n_tokens, head_dim],
  // both rotated by `rope` at `positions`.
  void project(const LayerWeights& w, const float* in, int64_t n_tokens, const int32_t* positions,
               const kernels::RopeParams& rope, float* q, float* kv);

  // out f32 [n_tokens, n_head * head_dim_v_mla]: each head's value from
  // `attended` f32 [n_tokens, n_head, head_dim], attention's output over
  // the cached rows (only its latent part is read).
  void values(const LayerWeights& w, const float* attended, int64_t n_tokens, float* out);

 private:
  void grow(int64_t n_tokens);

  const ModelSpec& spec_;
  kernels::Backend& backend_;
  int64_t capacity_ = 0;
  std::vector<float> q_low_;     // [T, q_lora_rank]: the compressed query, normed
  std::vector<float> q_full_;    // [T, n_head, head_dim_k_mla]: each head's non-rotated part, then its rotated one
  std::vector<float> kv_raw_;    // [T, kv_lora_rank + n_rot]: attn_kv_a_mqa's output
  std::vector<float> head_in_;   // [T, max(head_dim_k_mla - n_rot, kv_lora_rank)]: one head's rows, gathered
  std::vector<float> head_out_;  // [T, max(kv_lora_rank, head_dim_v_mla)]
  std::vector<int32_t> nope_rows_;  // 0 .. head_dim_k_mla - n_rot - 1: an unsplit k slice's rows, all summed
};

}  // namespace tc::model
