// LlamaWeights: views of a model's weight tensors, for every architecture of
// architecture.h (no copies: in CPU mode they point into the file's mmap,
// until cpu_repack.h replaces the Q4_0 matmul matrices with repacked
// copies). Fused tensors (attn_qkv, Phi-3's gate-up ffn_up) are split into
// views of their row ranges. Shapes in GGUF order {cols, rows}; row r of a
// matrix is output r. A tensor the file does not have is a null view
// (data == nullptr). Const after load.
#pragma once

#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "kernels/tensor.h"

namespace tc::model {

// One expert of a mixture of experts: views of its slices of the layer's
// 3-D ffn_gate_exps / ffn_up_exps {n_embd, n_ff, n_expert} and
// ffn_down_exps {n_ff, n_embd, n_expert} (n_ff: the expert's width).
struct ExpertWeights {
  kernels::Tensor gate;  // weight dtype {n_embd, n_ff}
  kernels::Tensor up;    // weight dtype {n_embd, n_ff}
  kernels::Tensor down;  // weight dtype {n_ff, n_embd}
  // Architecture::expert_biases (gpt-oss): this expert's rows of
  // ffn_{gate,up,down}_exps.bias; null views otherwise.
  kernels::Tensor gate_b;  // f32 [n_ff]
  kernels::Tensor up_b;    // f32 [n_ff]
  kernels::Tensor down_b;  // f32 [n_embd]
  // Gemma 4: this expert's output times its ffn_down_exps.scale value; 1: none.
  float down_scale = 1.0f;
};

struct LayerWeights {
  kernels::Tensor attn_norm;    // f32 [n_embd]; null in ModernBERT's layer 0 (identity)
  kernels::Tensor attn_q;       // weight dtype {n_embd, n_embd_q}
  kernels::Tensor attn_k;       // weight dtype {n_embd, n_embd_kv}
  kernels::Tensor attn_v;       // weight dtype {n_embd, n_embd_kv}
  kernels::Tensor attn_output;  // weight dtype {n_embd_q, n_embd}
  kernels::Tensor ffn_norm;     // f32 [n_embd]; null in the Parallel layer form
  // The FFN's input matrices, row i = neuron i. Ungated forms (Falcon) have
  // one: the file's ffn_up sits in ffn_gate, the matrix the activation is
  // applied to (so the sparse FFN's rules, "gate > 0 fires", hold as they
  // are), and ffn_up is null.
  kernels::Tensor ffn_gate;     // weight dtype {n_embd, n_ff}
  kernels::Tensor ffn_up;       // weight dtype {n_embd, n_ff}; null for ungated forms
  kernels::Tensor ffn_down;     // weight dtype {n_ff, n_embd}, row j = output j; data null in PWRI files
  kernels::Tensor ffn_down_t;   // weight dtype {n_embd, n_ff}, row i = neuron i (PWRI files); data null otherwise

  // Present in some architectures only (null views otherwise).
  kernels::Tensor attn_norm_b;     // f32 [n_embd]: LayerNorm bias
  kernels::Tensor attn_norm_2;     // f32 [n_embd]: Falcon-40B's separate norm of the attention input
  kernels::Tensor attn_norm_2_b;   // f32 [n_embd]
  kernels::Tensor ffn_norm_b;      // f32 [n_embd]
  kernels::Tensor attn_q_b;        // f32 [n_embd_q]: linear biases (Qwen2)
  kernels::Tensor attn_k_b;        // f32 [n_embd_kv]
  kernels::Tensor attn_v_b;        // f32 [n_embd_kv]
  kernels::Tensor attn_output_b;   // f32 [n_embd]
  kernels::Tensor ffn_gate_b;      // f32 [n_ff]
  kernels::Tensor ffn_up_b;        // f32 [n_ff]
  kernels::Tensor ffn_down_b;      // f32 [n_embd]
  kernels::Tensor attn_q_norm;     // f32 [head_dim]: RMSNorm of each query head (Qwen3, Gemma 3)
  kernels::Tensor attn_k_norm;     // f32 [head_dim]
  kernels::Tensor attn_post_norm;  // f32 [n_embd]: RMSNorm of the attention output (Gemma)
  kernels::Tensor ffn_post_norm;   // f32 [n_embd]: RMSNorm of the FFN output (Gemma)
  // BERT's LayerNorms of x after each block's output is added (Architecture::bert_layers).
  kernels::Tensor attn_out_norm;     // f32 [n_embd]: attn_output_norm
  kernels::Tensor attn_out_norm_b;   // f32 [n_embd]
  kernels::Tensor layer_out_norm;    // f32 [n_embd]: layer_output_norm
  kernels::Tensor layer_out_norm_b;  // f32 [n_embd]
  // jina-bert-v2's, where the file has them: LayerNorms of each token's whole
  // q and k (in attn_q_norm / attn_k_norm, f32 [n_embd]) with biases, and
  // attn_norm_2: x = attn_norm_2(attn_output_norm(x + attn) + x).
  kernels::Tensor attn_q_norm_b;     // f32 [n_embd]
  kernels::Tensor attn_k_norm_b;     // f32 [n_embd]
  kernels::Tensor attn_out_norm_2;   // f32 [n_embd]: the file's attn_norm_2
  kernels::Tensor attn_out_norm_2_b; // f32 [n_embd]
  kernels::Tensor attn_sinks;      // f32 [n_head]: each head's sink logit (gpt-oss)
  kernels::Tensor attn_gate;       // {n_embd, n_head * head_dim}: the attention output's sigmoid gate (AFMoE)
  // Gemma 4 (Architecture::gemma4_layers): the per-layer input's gate,
  // projection and norm, and the scalar the layer's output is multiplied by.
  kernels::Tensor per_layer_inp_gate;   // inp_gate, weight dtype {n_embd, n_embd_per_layer}
  kernels::Tensor per_layer_proj;       // proj, weight dtype {n_embd_per_layer, n_embd}
  kernels::Tensor per_layer_post_norm;  // post_norm, f32 [n_embd]
  kernels::Tensor layer_output_scale;   // f32 [1]
  // Gemma 3n (Architecture::altup_layers): AltUp's router and coefficients
  // over ModelSpec::altup's n_streams, and LAuReL's low-rank block.
  kernels::Tensor altup_router;         // altup_router, weight dtype {n_embd, n_streams}
  kernels::Tensor altup_router_norm;    // altup_router_norm, f32 [n_embd]
  kernels::Tensor altup_predict_coef;   // altup_predict_coef, weight dtype {n_streams, n_streams^2}
  kernels::Tensor altup_correct_coef;   // altup_correct_coef, weight dtype {n_streams, n_streams}
  kernels::Tensor altup_correct_scale;  // altup_correct_scale, f32 [n_embd]
  kernels::Tensor laurel_l;             // laurel_l, weight dtype {n_embd, laurel_rank}
  kernels::Tensor laurel_r;             // laurel_r, weight dtype {laurel_rank, n_embd}
  kernels::Tensor laurel_post_norm;     // laurel_post_norm, f32 [n_embd]
  // Qwen 3.5's gated delta net (ModelSpec::is_recurrent layers, whose
  // attn_q/k/v/output are null): widths of ModelSpec::delta_net.
  kernels::Tensor dn_qkv;      // attn_qkv, weight dtype {n_embd, conv_dim}: q, k, v rows into the convolution
  kernels::Tensor dn_z;        // attn_gate, weight dtype {n_embd, value_dim}: the output norm's gate
  kernels::Tensor dn_conv;     // ssm_conv1d, f32 {conv_kernel, conv_dim}: each channel's taps, oldest input first
  kernels::Tensor dn_dt_bias;  // ssm_dt.bias, f32 [n_v_heads]
  kernels::Tensor dn_a;        // ssm_a, f32 [n_v_heads]: -exp(A_log)
  kernels::Tensor dn_beta;     // ssm_beta, weight dtype {n_embd, n_v_heads}
  kernels::Tensor dn_alpha;    // ssm_alpha, weight dtype {n_embd, n_v_heads}
  kernels::Tensor dn_norm;     // ssm_norm, f32 [head_dim]
  kernels::Tensor dn_out;      // ssm_out, weight dtype {value_dim, n_embd}
  // Qwen3-Next's fused forms, grouped by key head (Architecture::qwen3next_delta_net):
  kernels::Tensor dn_qkvz;  // ssm_in, weight dtype {n_embd, conv_dim + value_dim}: in place of dn_qkv and dn_z
  kernels::Tensor dn_ba;    // ssm_ba, weight dtype {n_embd, 2 n_v_heads}: in place of dn_beta and dn_alpha
  // Mamba-2 (Granite 4.0-H's ModelSpec::is_recurrent layers): widths of ModelSpec::mamba2.
  kernels::Tensor m2_in;      // ssm_in, weight dtype {n_embd, in_dim}: z, then x B C, then dt
  kernels::Tensor m2_conv;    // ssm_conv1d, f32 {conv_kernel, conv_dim}: each channel's taps, oldest input first
  kernels::Tensor m2_conv_b;  // ssm_conv1d.bias, f32 [conv_dim] (optional)
  kernels::Tensor m2_dt_bias;  // ssm_dt.bias, f32 [n_head]
  kernels::Tensor m2_a;        // ssm_a, f32 {1, n_head}: -exp(A_log)
  kernels::Tensor m2_d;        // ssm_d, f32 {1, n_head}: the skip's weight
  kernels::Tensor m2_norm;     // ssm_norm, f32 {d_inner / n_group, n_group}: the grouped RMSNorm's weight
  kernels::Tensor m2_out;      // ssm_out, weight dtype {d_inner, n_embd}
  // Mamba-1 (ModelSpec::mamba1): m2_in {n_embd, 2 d_inner} (x, z), m2_conv
  // {conv_kernel, d_inner} and its bias, m2_dt_bias f32 [d_inner], m2_a f32
  // {d_state, d_inner}, m2_d f32 [d_inner], m2_out {d_inner, n_embd}, and:
  kernels::Tensor m1_x;   // ssm_x, weight dtype {d_inner, dt_rank + 2 d_state}: dt, B, C
  kernels::Tensor m1_dt;  // ssm_dt, weight dtype {dt_rank, d_inner}
  // Jamba's norms of dt, B and C (null elsewhere): f32 [dt_rank], [d_state], [d_state].
  kernels::Tensor m1_dt_norm, m1_b_norm, m1_c_norm;
  // LFM2's short convolution (ModelSpec::is_recurrent layers of Architecture::short_conv_layers).
  kernels::Tensor sc_in;    // shortconv.in_proj, weight dtype {n_embd, 3 n_embd}: b, c, x
  kernels::Tensor sc_conv;  // shortconv.conv, f32 {l_cache, n_embd}: each channel's taps, oldest input first
  kernels::Tensor sc_out;   // shortconv.out_proj, weight dtype {n_embd, n_embd}
  // Gemma 4's mixture beside the dense FFN (Architecture::gemma4_layers with
  // experts): the router input's scale, the experts' input norm, and the
  // norms of the dense FFN's and the experts' outputs.
  kernels::Tensor ffn_gate_inp_s;   // ffn_gate_inp.scale, f32 [n_embd]
  kernels::Tensor ffn_pre_norm_2;   // pre_ffw_norm_2, f32 [n_embd]
  kernels::Tensor ffn_post_norm_1;  // post_ffw_norm_1, f32 [n_embd]
  kernels::Tensor ffn_post_norm_2;  // post_ffw_norm_2, f32 [n_embd]

  // Multi-head latent attention (ModelSpec::is_mla; attn_k/v null, attn_q
  // only without a compressed query). Host views only, as the experts'.
  kernels::Tensor mla_q_a;        // attn_q_a, weight dtype {n_embd, q_lora_rank}; null without a compressed query
  kernels::Tensor mla_q_a_norm;   // attn_q_a_norm, f32 [q_lora_rank]
  kernels::Tensor mla_q_b;        // attn_q_b, weight dtype {q_lora_rank, n_head * head_dim_k_mla}
  kernels::Tensor mla_kv_a;       // attn_kv_a_mqa, weight dtype {n_embd, kv_lora_rank + n_rot}: the latent, then k's rotated part
  kernels::Tensor mla_kv_a_norm;  // attn_kv_a_norm, f32 [kv_lora_rank]
  // [n_head] slices of attn_k_b {head_dim_k_mla - n_rot, kv_lora_rank,
  // n_head} and attn_v_b {kv_lora_rank, head_dim_v_mla, n_head}: head h's
  // query absorption into the latent, and its value out of it. In a file
  // with one attn_kv_b (ModelSpec::mla_kv_b_unsplit) both are its row
  // ranges, the k slice untransposed: {kv_lora_rank, head_dim_k_mla - n_rot}.
  std::vector<kernels::Tensor> mla_k_b_heads;  // weight dtype {head_dim_k_mla - n_rot, kv_lora_rank} each
  std::vector<kernels::Tensor> mla_v_b_heads;  // weight dtype {kv_lora_rank, head_dim_v_mla} each

  // A mixture of experts (ModelSpec::has_experts; ffn_gate/up/down are then
  // null): the router, row e = expert e's logit, and the experts. Host
  // views only: the CPU backend runs them (layer_tensors leaves them out).
  kernels::Tensor ffn_gate_inp;        // weight dtype {n_embd, n_expert}
  kernels::Tensor ffn_gate_inp_b;      // f32 [n_expert]: the router's bias (gpt-oss); null otherwise
  kernels::Tensor ffn_exp_probs_b;     // f32 [n_expert]: the selection bias (ExpertGating::Sigmoid); null otherwise
  std::vector<ExpertWeights> experts;  // [n_expert]
  // The shared expert (ModelSpec::n_ff_shared > 0): its gate f32 [n_embd]
  // (null where ungated: Architecture::deepseek_experts) and its matrices,
  // n_ff = n_ff_shared (data null otherwise).
  kernels::Tensor ffn_gate_inp_shexp;
  ExpertWeights shared_expert;
};

struct LlamaWeights {
  kernels::Tensor token_embd;   // weight dtype {n_embd, n_vocab}
  kernels::Tensor output_norm;  // f32 [n_embd]
  kernels::Tensor output;       // weight dtype {n_embd, n_vocab}; token_embd when tied
  kernels::Tensor output_norm_b;  // f32 [n_embd]: LayerNorm bias; null for RMSNorm
  kernels::Tensor output_b;       // f32 [n_vocab]; null when the head has no bias
  // RoPE frequency factors, f32 [n_rot/2], null when absent: Llama 3.1's
  // rope_freqs, Phi-3's LongRoPE factors for contexts up to and past
  // n_ctx_orig.
  kernels::Tensor rope_freqs;
  kernels::Tensor rope_factors_short;
  kernels::Tensor rope_factors_long;
  // Gemma 4's per-layer inputs (ModelSpec::n_embd_per_layer > 0): each
  // token's rows for every layer, and their projection from the embedding.
  kernels::Tensor per_layer_token_embd;  // weight dtype {n_embd_per_layer * n_layer, n_vocab}
  kernels::Tensor per_layer_model_proj;  // weight dtype {n_embd, n_embd_per_layer * n_layer}
  kernels::Tensor per_layer_proj_norm;   // f32 [n_embd_per_layer]
  // Gemma 3n's streams 1.. from the embedding and back (slices of
  // altup_proj and altup_unembd_proj {n_embd, n_embd, n_streams - 1}).
  std::vector<kernels::Tensor> altup_proj;         // [n_streams - 1] weight dtype {n_embd, n_embd}
  std::vector<kernels::Tensor> altup_unembd_proj;  // [n_streams - 1] weight dtype {n_embd, n_embd}
  // An encoder's projections of its pooled embedding (Architecture::bidirectional;
  // null where absent): dense_2 then dense_3, back to n_embd.
  kernels::Tensor dense_2;  // dense_2, weight dtype {n_embd, n_dense}
  kernels::Tensor dense_3;  // dense_3, weight dtype {n_dense, n_embd}
  // BERT's inputs (Architecture::bert_layers): rows added to the token
  // embeddings, then their LayerNorm (ModernBERT's: the LayerNorm alone,
  // without a bias). Null where absent.
  kernels::Tensor position_embd;      // f32 or f16 {n_embd, n_ctx_train}: Absolute positions only
  kernels::Tensor token_types;        // f32 or f16 {n_embd, n_token_types}: row 0 added to every token
  kernels::Tensor token_embd_norm;    // f32 [n_embd]
  kernels::Tensor token_embd_norm_b;  // f32 [n_embd]
  // A reranker's classification head (rank pooling; null where absent):
  // an encoder's first token's row through cls, tanh, then cls.output
  // (ModernBERT's: the mean row through cls, gelu, cls.norm, cls.output);
  // Qwen3-Reranker's last token's row through cls.output alone; jina's
  // (jina-bert-v2) the first token's row through cls and tanh alone.
  kernels::Tensor cls;        // weight dtype {n_embd, n_embd}; jina's {n_embd, n_cls_out}
  kernels::Tensor cls_b;      // f32 [n_embd]; jina's [n_cls_out]
  kernels::Tensor cls_norm;   // f32 [n_embd]: ModernBERT's LayerNorm (no bias) after cls and its gelu
  kernels::Tensor cls_out;    // weight dtype {n_embd, n_cls_out}
  kernels::Tensor cls_out_b;  // f32 [n_cls_out]
  std::vector<LayerWeights> layers;
};

// A view of tensor `name` in `file` (which must outlive it). Throws
// ModelLoadError naming the tensor when it is missing.
kernels::Tensor tensor_view(const gguf::GgufFile& file, const std::string& name);

// Views into `file` (which must outlive the result), each checked for its
// shape and dtype. The spec must come from read_model_spec on the same
// file. PWRI files give ffn_down_t, the others ffn_down. Throws
// ModelLoadError naming the first tensor at fault and what was expected.
LlamaWeights map_llama_weights(const gguf::GgufFile& file, const ModelSpec& spec);

// Every tensor slot of `w`, with its name (the row-range views of a fused
// tensor under their own names: "blk.0.attn_q.weight" of attn_qkv), for
// placing and walking them; null views included.
struct NamedTensor {
  kernels::Tensor* tensor;
  std::string name;
  bool ffn_matrix = false;  // ffn_gate, ffn_up, ffn_down or ffn_down_t
};
std::vector<NamedTensor> non_layer_tensors(LlamaWeights& w);
std::vector<NamedTensor> layer_tensors(LayerWeights& w, int64_t layer);

}  // namespace tc::model
