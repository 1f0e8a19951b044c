// Multi-head latent attention: the latent projections around the ordinary
// attention call (see the header for the layout).
#include "engine/model/mla_attention.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace tc::model {
namespace {

const float* f32(const kernels::Tensor& t) { return static_cast<const float*>(t.data); }

}  // namespace

MlaAttention::MlaAttention(const ModelSpec& spec, kernels::Backend& backend) : spec_(spec), backend_(backend) {
  if (!spec.is_mla()) throw std::invalid_argument("MlaAttention: the model has no latent attention");
  if (backend.device() != kernels::DeviceKind::Cpu) {
    throw std::invalid_argument("multi-head latent attention runs on the CPU backend only so far");
  }
  nope_rows_.resize(static_cast<size_t>(spec.head_dim_k_mla - spec.n_rot));
  std::iota(nope_rows_.begin(), nope_rows_.end(), 0);
}

void MlaAttention::grow(int64_t n_tokens) {
  if (n_tokens <= capacity_) return;
  const int64_t t = std::max(n_tokens, capacity_ * 2);
  const auto n = [t](int64_t width) { return static_cast<size_t>(t * width); };
  const int64_t nope = spec_.head_dim_k_mla - spec_.n_rot;
  q_low_.resize(n(spec_.q_lora_rank));
  q_full_.resize(n(spec_.n_head * spec_.head_dim_k_mla));
  kv_raw_.resize(n(spec_.kv_lora_rank + spec_.n_rot));
  head_in_.resize(n(std::max(nope, spec_.kv_lora_rank)));
  head_out_.resize(n(std::max(spec_.kv_lora_rank, spec_.head_dim_v_mla)));
  capacity_ = t;
}

void MlaAttention::project(const LayerWeights& w, const float* in, int64_t n_tokens, const int32_t* positions,
                           const kernels::RopeParams& rope, float* q, float* kv) {
  grow(n_tokens);
  const int64_t n_head = spec_.n_head;
  const int64_t n_rot = spec_.n_rot;
  const int64_t rank = spec_.kv_lora_rank;
  const int64_t head_dim = spec_.head_dim;          // n_rot + rank: a cached row, and a query head
  const int64_t head_k = spec_.head_dim_k_mla;      // a decompressed query head: nope, then rope
  const int64_t nope = head_k - n_rot;
  const auto eps = static_cast<float>(spec_.rms_eps);
  auto& b = backend_;

  // The query heads, decompressed: straight from attn_q, or through the low-rank pair.
  if (w.mla_q_a.data != nullptr) {
    b.matmul(w.mla_q_a, in, n_tokens, q_low_.data());
    b.rms_norm(q_low_.data(), f32(w.mla_q_a_norm), n_tokens, spec_.q_lora_rank, eps, q_low_.data());
    b.matmul(w.mla_q_b, q_low_.data(), n_tokens, q_full_.data());
  } else {
    b.matmul(w.attn_q, in, n_tokens, q_full_.data());
  }
  // The latent row: k's rotated part first, then the normed latent.
  b.matmul(w.mla_kv_a, in, n_tokens, kv_raw_.data());
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* raw = kv_raw_.data() + t * (rank + n_rot);
    float* row = kv + t * head_dim;
    std::memcpy(row, raw + rank, static_cast<size_t>(n_rot) * sizeof(float));
    b.rms_norm(raw, f32(w.mla_kv_a_norm), 1, rank, eps, row + n_rot);
  }
  // Each query head: its rotated part first, then its non-rotated part
  // taken into the latent's space by attn_k_b (one matmul per head over
  // the step's tokens).
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* src = q_full_.data() + (t * n_head + h) * head_k;
      std::memcpy(q + (t * n_head + h) * head_dim, src + nope, static_cast<size_t>(n_rot) * sizeof(float));
      std::memcpy(head_in_.data() + t * nope, src, static_cast<size_t>(nope) * sizeof(float));
    }
    const kernels::Tensor& k_b = w.mla_k_b_heads[static_cast<size_t>(h)];
    if (spec_.mla_kv_b_unsplit) {
      b.axpy_rows(k_b, head_in_.data(), n_tokens, nope_rows_.data(), nope, head_out_.data());
    } else {
      b.matmul(k_b, head_in_.data(), n_tokens, head_out_.data());
    }
    for (int64_t t = 0; t < n_tokens; ++t) {
      std::memcpy(q + (t * n_head + h) * head_dim + n_rot, head_out_.data() + t * rank,
                  static_cast<size_t>(rank) * sizeof(float));
    }
  }
  // RoPE on the first n_rot values of every query head and of the latent row.
  b.rope(q, n_tokens, n_head, head_dim, positions, rope);
  b.rope(kv, n_tokens, 1, head_dim, positions, rope);
}

void MlaAttention::values(const LayerWeights& w, const float* attended, int64_t n_tokens, float* out) {
  grow(n_tokens);
  const int64_t n_head = spec_.n_head;
  const int64_t n_rot = spec_.n_rot;
  const int64_t rank = spec_.kv_lora_rank;
  const int64_t head_dim = spec_.head_dim;
  const int64_t head_v = spec_.head_dim_v_mla;
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      std::memcpy(head_in_.data() + t * rank, attended + (t * n_head + h) * head_dim + n_rot,
                  static_cast<size_t>(rank) * sizeof(float));
    }
    backend_.matmul(w.mla_v_b_heads[static_cast<size_t>(h)], head_in_.data(), n_tokens, head_out_.data());
    for (int64_t t = 0; t < n_tokens; ++t) {
      std::memcpy(out + (t * n_head + h) * head_v, head_out_.data() + t * head_v,
                  static_cast<size_t>(head_v) * sizeof(float));
    }
  }
}

}  // namespace tc::model
