// LlamaModel::run_attention: a layer's attention block, from the normed
// input to attn_output's product (before its bias and the residual add).
#include <algorithm>
#include <cmath>

#include "engine/model/llama_model.h"

namespace tc::model {

void LlamaModel::run_attention(kernels::Backend& b, Workspace& ws, const int32_t* positions, const int32_t* horizons,
                               const LayerWeights& w, int64_t layer, std::span<const StepSequence> sequences,
                               runtime::KvCache& kv, int64_t n_tokens) {
  const LayerShape shape = spec_.shape(layer);
  const int64_t n_embd_q = spec_.n_embd_q(layer);
  const int64_t n_embd_kv = spec_.n_embd_kv(layer);
  float* cur = ws.cur.as<float>();
  float* q = ws.q.as<float>();
  float* k = ws.k.as<float>();
  float* v = ws.v.as<float>();
  float* tmp = ws.tmp.as<float>();
  auto f32 = [](const kernels::Tensor& t) { return static_cast<const float*>(t.data); };
  if (w.attn_gate.data != nullptr) {
    // The output gate's logits from the normed input (experts: on the host).
    attn_gate_.resize(std::max(attn_gate_.size(), static_cast<size_t>(n_tokens * n_embd_q)));
    b.matmul(w.attn_gate, cur, n_tokens, attn_gate_.data());
  }
  if (mla_ != nullptr) {
    // The latent row is the one KV head's key and its value (one cached matrix).
    mla_->project(w, cur, n_tokens, positions, rope_params(b, layer), q, k);
    v = k;
  } else {
    project_qkv(b, w, layer, cur, n_tokens, positions, q, k, v);
  }
  int64_t t = 0;
  attention_sequences_.clear();  // keeps its capacity: no allocation once the largest step has run
  for (const auto& s : sequences) {
    const auto n = static_cast<int64_t>(s.tokens.size());
    const int64_t start = kv.n_used(s.slot);
    auto* k_cache = static_cast<std::byte*>(kv.k(s.slot, layer));
    auto* v_cache = static_cast<std::byte*>(kv.v(s.slot, layer));
    if (!spec_.shares_kv(layer)) {
      b.store_kv(k + t * n_embd_kv, n, n_embd_kv, kv.types().k, k_cache + start * kv.k_row_bytes(layer));
      if (v_cache != k_cache) {
        b.store_kv(v + t * n_embd_kv, n, n_embd_kv, kv.types().v, v_cache + start * kv.v_row_bytes(layer));
      }
    }
    attention_sequences_.push_back(
        {q + t * n_embd_q, k_cache, v_cache, n, start + n, horizons + t, cur + t * n_embd_q});
    t += n;
  }
  const kernels::AttentionParams attention{spec_.attn_scale,
                                           spec_.attn_softcap,
                                           spec_.is_swa(layer) ? spec_.n_swa : 0,
                                           f32(w.attn_sinks),
                                           kv.types().k,
                                           kv.types().v,
                                           spec_.architecture->bidirectional,
                                           spec_.alibi_max_bias};
  b.attention_batch(attention_sequences_, spec_.n_head, shape.n_head_kv, shape.head_dim, attention);
  if (mla_ != nullptr) {
    mla_->values(w, cur, n_tokens, q);  // q's rows are free once attention has run
    b.matmul(w.attn_output, q, n_tokens, tmp);
  } else {
    if (w.attn_gate.data != nullptr || spec_.architecture->qwen35_layers) {
      b.synchronize();
      for (int64_t i = 0; i < n_tokens * n_embd_q; ++i) {
        cur[i] *= 1.0f / (1.0f + std::exp(-attn_gate_[static_cast<size_t>(i)]));
      }
    }
    prepare_input(layer, LinearInput::AttnOutput, n_tokens, n_embd_q, cur);
    b.matmul(w.attn_output, cur, n_tokens, tmp);
  }
}

void LlamaModel::project_gated_q(kernels::Backend& b, const LayerWeights& w, const float* cur, int64_t n_tokens,
                                 float* q, float* k, float* v) {
  // Qwen 3.5: attn_q's rows hold each head's queries, then its output gate.
  const int64_t head_dim = spec_.head_dim, n_embd_q = spec_.n_embd_q();
  gated_q_.resize(std::max(gated_q_.size(), static_cast<size_t>(2 * n_tokens * n_embd_q)));
  attn_gate_.resize(std::max(attn_gate_.size(), static_cast<size_t>(n_tokens * n_embd_q)));
  const kernels::MatmulTarget qkv[] = {{&w.attn_q, gated_q_.data()}, {&w.attn_k, k}, {&w.attn_v, v}};
  b.matmul_many(qkv, cur, n_tokens);
  b.synchronize();
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t h = 0; h < spec_.n_head; ++h) {
      const float* both = gated_q_.data() + (t * spec_.n_head + h) * 2 * head_dim;
      std::copy_n(both, head_dim, q + t * n_embd_q + h * head_dim);
      std::copy_n(both + head_dim, head_dim, attn_gate_.data() + t * n_embd_q + h * head_dim);
    }
  }
}

}  // namespace tc::model

