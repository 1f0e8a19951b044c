// decode_bytes_per_token: tensor sizes from the file's directory, scaled by
// the sparse FFN's measured neuron counts.
#include "engine/sparse/decode_bytes.h"

#include "engine/runtime/kv_cache.h"

namespace tc::sparse {
namespace {

double tensor_bytes(const gguf::GgufFile& file, const std::string& name) {
  const auto* info = file.find_tensor(name);
  return info == nullptr ? 0.0 : static_cast<double>(kernels::row_bytes(info->dtype, info->ne[0]) * info->n_rows());
}

}  // namespace

DecodeBytes decode_bytes_per_token(const model::LoadedModel& model, const model::SparseFfnCounters* counters,
                                   double mean_context, kernels::KvCacheTypes kv_types) {
  const auto& f = model.file;
  const auto& s = model.spec;
  DecodeBytes b;
  for (int64_t l = 0; l < s.n_layer; ++l) {
    auto bytes = [&](const char* t) { return tensor_bytes(f, model::layer_tensor_name(l, t)); };
    b.attention += bytes("attn_norm") + bytes("attn_q") + bytes("attn_k") + bytes("attn_v") + bytes("attn_qkv") +
                   bytes("attn_output") + bytes("ffn_norm");
    // Latent attention's (deepseek2): every head's slices of attn_k_b and attn_v_b are read.
    b.attention += bytes("attn_q_a") + bytes("attn_q_b") + bytes("attn_kv_a_mqa") + bytes("attn_k_b") + bytes("attn_v_b");
    // A recurrent layer's in place of attention (the delta net, Mamba-2, the short convolution).
    if (s.is_recurrent(l)) {
      for (const char* t : {"attn_gate", "ssm_in", "ssm_ba", "ssm_beta", "ssm_alpha", "ssm_conv1d", "ssm_norm",
                            "ssm_out", "shortconv.in_proj", "shortconv.conv", "shortconv.out_proj"}) {
        b.attention += bytes(t);
      }
    }
    if (s.layer_has_experts(l)) {  // the router, and expert_used_count of expert_count experts
      const double share = static_cast<double>(s.n_expert_used) / static_cast<double>(s.n_expert);
      b.ffn += bytes("ffn_gate_inp") + share * (bytes("ffn_gate_exps") + bytes("ffn_up_exps") + bytes("ffn_down_exps")) +
               bytes("ffn_gate_inp_shexp") + bytes("ffn_gate_shexp") + bytes("ffn_up_shexp") + bytes("ffn_down_shexp");
      continue;
    }
    const double gate = bytes("ffn_gate");
    const double up = bytes("ffn_up");
    const double down = bytes("ffn_down") + bytes("ffn_down_t");  // one of the two is in the file
    const auto i = static_cast<size_t>(l);
    if (counters == nullptr || counters->token_layers[i] == 0) {
      b.ffn += gate + up + down;
      continue;
    }
    const double tokens = static_cast<double>(counters->token_layers[i]);
    const double n_ff = static_cast<double>(s.n_ff);
    const double predicted = static_cast<double>(counters->predicted[i]) / tokens / n_ff;
    const double computed = static_cast<double>(counters->computed[i]) / tokens / n_ff;
    b.ffn += predicted * gate + computed * (up + down);
    const auto& p = model.predictors.layers[i];
    b.predictors += static_cast<double>(p.fc1.row_bytes * p.fc1.n_rows() + p.fc2.row_bytes * p.fc2.n_rows());
  }
  const double embd_row = tensor_bytes(f, "token_embd.weight") / static_cast<double>(s.n_vocab);
  b.head = (s.tied_embeddings ? tensor_bytes(f, "token_embd.weight") : tensor_bytes(f, "output.weight")) +
           tensor_bytes(f, "output_norm.weight") + embd_row;
  // Every layer's K and V rows of one position, at their types; a
  // recurrent layer's state once (bytes_for counts it, and its checkpoint,
  // once per slot).
  const auto slot_bytes = [&](int64_t n_ctx) {
    return static_cast<double>(runtime::KvCache::bytes_for(s, 1, n_ctx, kv_types));
  };
  const double position = slot_bytes(2) - slot_bytes(1);
  const double state_and_checkpoint = slot_bytes(1) - position;
  b.kv = mean_context * position + state_and_checkpoint / 2;
  return b;
}

}  // namespace tc::sparse
