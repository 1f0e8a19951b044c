// LlamaModel::run_altup_layer: one Gemma 3n layer (Architecture::altup_layers)
// in llama.cpp's order of operations (gemma3n.cpp): AltUp's prediction, the
// attention block beside LAuReL, the FFN, AltUp's correction, and the
// per-layer input added to the inactive streams.
#include <cmath>

#include "engine/model/altup_streams.h"
#include "engine/model/llama_model.h"

namespace tc::model {

void LlamaModel::run_altup_layer(kernels::Backend& b, Workspace& ws, const int32_t* positions,
                                 const int32_t* horizons, const LayerWeights& w, int64_t layer,
                                 std::span<const StepSequence> sequences, runtime::KvCache& kv, int64_t n_tokens) {
  const int64_t n_embd = spec_.n_embd;
  const int64_t n = n_tokens * n_embd;
  const auto eps = static_cast<float>(spec_.rms_eps);
  auto f32 = [](const kernels::Tensor& t) { return static_cast<const float*>(t.data); };
  if (altup_rows_.laurel.size() < static_cast<size_t>(n)) {
    altup_rows_.laurel.resize(static_cast<size_t>(n));
    altup_rows_.ffn_out.resize(static_cast<size_t>(n));
    altup_rows_.gate_input.resize(static_cast<size_t>(n));
    altup_rows_.low_rank.resize(static_cast<size_t>(n_tokens * spec_.altup.laurel_rank));
  }
  float* x = ws.x.as<float>();  // the active stream's prediction until the correction
  float* cur = ws.cur.as<float>();
  float* tmp = ws.tmp.as<float>();
  float* laurel = altup_rows_.laurel.data();
  float* ffn_out = altup_rows_.ffn_out.data();

  altup_->predict(b, w, x, n_tokens);
  b.rms_norm(x, f32(w.attn_norm), n_tokens, n_embd, eps, cur);
  // LAuReL: cur + laurel_post_norm(laurel_r · laurel_l · cur).
  b.matmul(w.laurel_l, cur, n_tokens, altup_rows_.low_rank.data());
  b.matmul(w.laurel_r, altup_rows_.low_rank.data(), n_tokens, laurel);
  b.rms_norm(laurel, f32(w.laurel_post_norm), n_tokens, n_embd, eps, laurel);
  b.add(laurel, cur, n);

  prepare_input(layer, LinearInput::AttnQkv, n_tokens, n_embd, cur);
  run_attention(b, ws, positions, horizons, w, layer, sequences, kv, n_tokens);
  b.rms_norm(tmp, f32(w.attn_post_norm), n_tokens, n_embd, eps, tmp);
  // (attention + the active prediction + LAuReL) / sqrt(2)
  b.add(tmp, x, n);
  b.add(tmp, laurel, n);
  b.scale(tmp, n, 1.0f / std::sqrt(2.0f));

  b.rms_norm(tmp, f32(w.ffn_norm), n_tokens, n_embd, eps, cur);
  run_ffn_runs(b, ws, w, layer, sequences, cur, ffn_out);
  b.rms_norm(ffn_out, f32(w.ffn_post_norm), n_tokens, n_embd, eps, ffn_out);
  b.add(ffn_out, tmp, n);  // the layer's output for the active stream

  altup_->correct(b, w, ffn_out, x, n_tokens);
  altup_->scaled_active(w, x, n_tokens, altup_rows_.gate_input.data());
  altup_->add_to_inactive(b, per_layer_inputs_->block(b, w, layer, altup_rows_.gate_input.data(), n_tokens),
                          n_tokens);
}

}  // namespace tc::model
