// map_llama_weights: the tensors an architecture has (architecture.h) ->
// checked views into the mapped file.
#include "engine/model/llama_weights.h"

#include <string>
#include <vector>

namespace tc::model {
namespace {

using gguf::GgufFile;
using kernels::DType;
using kernels::Tensor;

std::string dims(std::initializer_list<int64_t> ne) {
  std::string out = "[";
  for (const int64_t n : ne) out += (out.size() > 1 ? ", " : "") + std::to_string(n);
  return out + "]";
}

// Maps the tensors of one file, checking each against what the spec expects.
class Mapper {
 public:
  Mapper(const GgufFile& file) : file_(file) {}

  bool has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

  // A matrix of a weight dtype with ne = {n_cols, n_rows}.
  Tensor matrix(const std::string& name, int64_t n_cols, int64_t n_rows) const {
    const auto& info = file_.tensor(name, {n_cols, n_rows});
    if (!is_weight_dtype(info.dtype)) {
      throw file_.error(name, "has dtype " + std::string(kernels::dtype_name(info.dtype)) +
                                  ", expected a weight dtype (f32, f16, bf16 or a block format)");
    }
    return tensor_view(file_, name);
  }
  // The n_expert matrices {n_cols, n_rows} of a 3-D tensor {n_cols, n_rows, n_expert}.
  std::vector<Tensor> expert_matrices(const std::string& name, int64_t n_cols, int64_t n_rows,
                                      int64_t n_expert) const {
    const auto& info = file_.tensor(name, {n_cols, n_rows, n_expert});
    if (!is_weight_dtype(info.dtype)) {
      throw file_.error(name, "has dtype " + std::string(kernels::dtype_name(info.dtype)) +
                                  ", expected a weight dtype (f32, f16, bf16 or a block format)");
    }
    Tensor all = tensor_view(file_, name);
    std::vector<Tensor> out(static_cast<size_t>(n_expert));
    for (int64_t e = 0; e < n_expert; ++e) {
      Tensor& t = out[static_cast<size_t>(e)];
      t = all;
      t.data = static_cast<std::byte*>(all.data) + e * n_rows * all.row_bytes;
      t.ne = {n_cols, n_rows, 1, 1};
    }
    return out;
  }
  Tensor optional_matrix(const std::string& name, int64_t n_cols, int64_t n_rows) const {
    return has(name) ? matrix(name, n_cols, n_rows) : Tensor{};
  }

  // An f32 vector of n values (a norm weight or a bias).
  Tensor vector(const std::string& name, int64_t n) const {
    const auto& info = file_.tensor(name, {n});
    if (info.dtype != DType::F32) {
      throw file_.error(name, "has dtype " + std::string(kernels::dtype_name(info.dtype)) +
                                  ", expected f32 for a norm weight or a bias " + dims({n}));
    }
    return tensor_view(file_, name);
  }
  Tensor optional_vector(const std::string& name, int64_t n) const { return has(name) ? vector(name, n) : Tensor{}; }
  // The n_expert f32 vectors of n values of a 2-D tensor {n, n_expert} (expert biases).
  std::vector<Tensor> expert_vectors(const std::string& name, int64_t n, int64_t n_expert) const {
    const auto& info = file_.tensor(name, {n, n_expert});
    if (info.dtype != DType::F32) {
      throw file_.error(name, "has dtype " + std::string(kernels::dtype_name(info.dtype)) +
                                  ", expected f32 for the experts' biases " + dims({n, n_expert}));
    }
    const Tensor all = tensor_view(file_, name);
    std::vector<Tensor> out(static_cast<size_t>(n_expert));
    for (int64_t e = 0; e < n_expert; ++e) {
      Tensor& t = out[static_cast<size_t>(e)];
      t = all;
      t.data = static_cast<float*>(all.data) + e * n;
      t.ne = {n, 1, 1, 1};
    }
    return out;
  }

  gguf::ModelLoadError error(const std::string& name, const std::string& problem) const {
    return file_.error(name, problem);
  }

 private:
  const GgufFile& file_;
};

// Rows [first, first + n) of a matrix view, as a matrix of n rows.
Tensor row_range(Tensor t, int64_t first, int64_t n) {
  t.data = static_cast<std::byte*>(t.data) + first * t.row_bytes;
  t.ne[1] = n;
  return t;
}

// Values [first, first + n) of a vector view.
Tensor value_range(Tensor t, int64_t first, int64_t n) {
  if (t.data == nullptr) return t;
  t.data = static_cast<float*>(t.data) + first;
  t.ne[0] = n;
  t.row_bytes = kernels::row_bytes(t.dtype, n);
  return t;
}

std::string bias_name(int64_t layer, std::string_view tensor) {
  return "blk." + std::to_string(layer) + "." + std::string(tensor) + ".bias";
}

// Gemma 3n's AltUp and LAuReL tensors of layer l (llama.cpp's gemma3n names).
void map_altup_layer(const Mapper& m, const ModelSpec& s, int64_t l, LayerWeights& w) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  const int64_t n = s.altup.n_streams;
  w.altup_router = m.matrix(name("altup_router"), s.n_embd, n);
  w.altup_router_norm = m.vector(name("altup_router_norm"), s.n_embd);
  w.altup_predict_coef = m.matrix(name("altup_predict_coef"), n, n * n);
  w.altup_correct_coef = m.matrix(name("altup_correct_coef"), n, n);
  w.altup_correct_scale = m.vector(name("altup_correct_scale"), s.n_embd);
  w.laurel_l = m.matrix(name("laurel_l"), s.n_embd, s.altup.laurel_rank);
  w.laurel_r = m.matrix(name("laurel_r"), s.altup.laurel_rank, s.n_embd);
  w.laurel_post_norm = m.vector(name("laurel_post_norm"), s.n_embd);
}

// Multi-head latent attention's tensors (llama.cpp's deepseek2 names).
void map_mla(const Mapper& m, const ModelSpec& s, int64_t l, LayerWeights& w) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  const int64_t n_q = s.n_head * s.head_dim_k_mla;
  if (s.q_lora_rank > 0) {
    w.mla_q_a = m.matrix(name("attn_q_a"), s.n_embd, s.q_lora_rank);
    w.mla_q_a_norm = m.vector(name("attn_q_a_norm"), s.q_lora_rank);
    w.mla_q_b = m.matrix(name("attn_q_b"), s.q_lora_rank, n_q);
  } else {
    w.attn_q = m.matrix(name("attn_q"), s.n_embd, n_q);
  }
  w.mla_kv_a = m.matrix(name("attn_kv_a_mqa"), s.n_embd, s.kv_lora_rank + s.n_rot);
  w.mla_kv_a_norm = m.vector(name("attn_kv_a_norm"), s.kv_lora_rank);
  const int64_t nope = s.head_dim_k_mla - s.n_rot;
  if (s.mla_kv_b_unsplit) {
    // attn_kv_b {kv_lora_rank, n_head * (nope + head_dim_v_mla)}: per head
    // its k rows (untransposed: MlaAttention sums them weighted by q_nope),
    // then its v rows.
    const int64_t per_head = nope + s.head_dim_v_mla;
    const Tensor kv_b = m.matrix(name("attn_kv_b"), s.kv_lora_rank, s.n_head * per_head);
    for (int64_t h = 0; h < s.n_head; ++h) {
      w.mla_k_b_heads.push_back(row_range(kv_b, h * per_head, nope));
      w.mla_v_b_heads.push_back(row_range(kv_b, h * per_head + nope, s.head_dim_v_mla));
    }
    return;
  }
  w.mla_k_b_heads = m.expert_matrices(name("attn_k_b"), nope, s.kv_lora_rank, s.n_head);
  w.mla_v_b_heads = m.expert_matrices(name("attn_v_b"), s.kv_lora_rank, s.head_dim_v_mla, s.n_head);
}

// Qwen 3.5's gated delta net layer (llama.cpp's qwen35 names; Qwen3-Next's
// fused ssm_in and ssm_ba).
void map_delta_net(const Mapper& m, const ModelSpec& s, int64_t l, LayerWeights& w) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  const DeltaNetShape& d = s.delta_net;
  const bool qwen3next = s.architecture->qwen3next_delta_net;
  if (qwen3next && m.has(name("ssm_in"))) {
    w.dn_qkvz = m.matrix(name("ssm_in"), s.n_embd, d.conv_dim() + d.value_dim());
  } else {
    w.dn_qkv = m.matrix(name("attn_qkv"), s.n_embd, d.conv_dim());
    w.dn_z = m.matrix(name("attn_gate"), s.n_embd, d.value_dim());
  }
  w.dn_conv = m.matrix(name("ssm_conv1d"), d.conv_kernel, d.conv_dim());
  if (w.dn_conv.dtype != DType::F32) throw m.error(name("ssm_conv1d"), "must be f32 (the convolution's taps)");
  w.dn_dt_bias = m.vector("blk." + std::to_string(l) + ".ssm_dt.bias", d.n_v_heads);
  w.dn_a = m.vector("blk." + std::to_string(l) + ".ssm_a", d.n_v_heads);
  if (qwen3next) {
    w.dn_ba = m.matrix(name("ssm_ba"), s.n_embd, 2 * d.n_v_heads);
  } else {
    w.dn_beta = m.matrix(name("ssm_beta"), s.n_embd, d.n_v_heads);
    w.dn_alpha = m.matrix(name("ssm_alpha"), s.n_embd, d.n_v_heads);
  }
  w.dn_norm = m.vector(name("ssm_norm"), d.head_dim);
  w.dn_out = m.matrix(name("ssm_out"), d.value_dim(), s.n_embd);
}

// Granite 4.0-H's Mamba-2 layer (llama.cpp's granitehybrid names).
void map_mamba2(const Mapper& m, const ModelSpec& s, int64_t l, LayerWeights& w) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  const std::string blk = "blk." + std::to_string(l) + ".";
  const Mamba2Shape& d = s.mamba2;
  w.m2_in = m.matrix(name("ssm_in"), s.n_embd, d.in_dim());
  w.m2_conv = m.matrix(name("ssm_conv1d"), d.conv_kernel, d.conv_dim());
  if (w.m2_conv.dtype != DType::F32) throw m.error(name("ssm_conv1d"), "must be f32 (the convolution's taps)");
  w.m2_conv_b = m.optional_vector(bias_name(l, "ssm_conv1d"), d.conv_dim());
  w.m2_dt_bias = m.vector(bias_name(l, "ssm_dt"), d.n_head);
  w.m2_a = m.matrix(blk + "ssm_a", 1, d.n_head);
  w.m2_d = m.matrix(blk + "ssm_d", 1, d.n_head);
  for (const auto* t : {&w.m2_a, &w.m2_d}) {
    if (t->dtype != DType::F32) throw m.error(t == &w.m2_a ? blk + "ssm_a" : blk + "ssm_d", "must be f32");
  }
  // Falcon-H1's may lack it (its mamba_rms_norm off): y * silu(z) is then not normed.
  w.m2_norm = s.attends_beside_mamba2 ? m.optional_matrix(name("ssm_norm"), d.d_inner / d.n_group, d.n_group)
                                      : m.matrix(name("ssm_norm"), d.d_inner / d.n_group, d.n_group);
  if (w.m2_norm.data != nullptr && w.m2_norm.dtype != DType::F32) throw m.error(name("ssm_norm"), "must be f32");
  w.m2_out = m.matrix(name("ssm_out"), d.d_inner, s.n_embd);
}

// A Mamba-1 layer (llama.cpp's mamba names).
void map_mamba1(const Mapper& m, const ModelSpec& s, int64_t l, LayerWeights& w) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  const std::string blk = "blk." + std::to_string(l) + ".";
  const Mamba1Shape& d = s.mamba1;
  w.m2_in = m.matrix(name("ssm_in"), s.n_embd, 2 * d.d_inner);
  w.m2_conv = m.matrix(name("ssm_conv1d"), d.conv_kernel, d.d_inner);
  if (w.m2_conv.dtype != DType::F32) throw m.error(name("ssm_conv1d"), "must be f32 (the convolution's taps)");
  w.m2_conv_b = m.vector(bias_name(l, "ssm_conv1d"), d.d_inner);
  w.m1_x = m.matrix(name("ssm_x"), d.d_inner, d.dt_rank + 2 * d.d_state);
  w.m1_dt = m.matrix(name("ssm_dt"), d.dt_rank, d.d_inner);
  w.m2_dt_bias = m.vector(bias_name(l, "ssm_dt"), d.d_inner);
  w.m2_a = m.matrix(blk + "ssm_a", d.d_state, d.d_inner);
  if (w.m2_a.dtype != DType::F32) throw m.error(blk + "ssm_a", "must be f32");
  w.m2_d = m.vector(blk + "ssm_d", d.d_inner);
  w.m2_out = m.matrix(name("ssm_out"), d.d_inner, s.n_embd);
  if (s.architecture->single_block_layers) return;  // mamba: no learned norms
  w.m1_dt_norm = m.vector(name("ssm_dt_norm"), d.dt_rank);
  w.m1_b_norm = m.vector(name("ssm_b_norm"), d.d_state);
  w.m1_c_norm = m.vector(name("ssm_c_norm"), d.d_state);
}

// LFM2's short convolution layer (llama.cpp's lfm2 names).
void map_short_conv(const Mapper& m, const ModelSpec& s, int64_t l, LayerWeights& w) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  w.sc_in = m.matrix(name("shortconv.in_proj"), s.n_embd, 3 * s.n_embd);
  w.sc_conv = m.matrix(name("shortconv.conv"), s.short_conv_taps, s.n_embd);
  if (w.sc_conv.dtype != DType::F32) throw m.error(name("shortconv.conv"), "must be f32 (the convolution's taps)");
  w.sc_out = m.matrix(name("shortconv.out_proj"), s.n_embd, s.n_embd);
}

// q, k and v: separate tensors, or llama.cpp's fused attn_qkv (rows: q, then
// k, then v) split into views; biases likewise.
void map_attention(const Mapper& m, const ModelSpec& s, int64_t l, LayerWeights& w) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  if (s.is_mla()) {
    map_mla(m, s, l, w);
    return;
  }
  const int64_t n_q = s.n_embd_q(l), n_kv = s.n_embd_kv(l);
  if (s.architecture->qwen35_layers) {
    // Each head's queries, then its output gate: twice q's width.
    w.attn_q = m.matrix(name("attn_q"), s.n_embd, 2 * n_q);
    w.attn_k = m.matrix(name("attn_k"), s.n_embd, n_kv);
    w.attn_v = m.matrix(name("attn_v"), s.n_embd, n_kv);
    return;
  }
  if (s.architecture->gemma4_layers) {
    // A layer that shares an earlier one's cache may lack attn_k; any may lack
    // attn_v (its values are then attn_k's rows).
    w.attn_q = m.matrix(name("attn_q"), s.n_embd, n_q);
    w.attn_k = s.shares_kv(l) ? m.optional_matrix(name("attn_k"), s.n_embd, n_kv)
                              : m.matrix(name("attn_k"), s.n_embd, n_kv);
    w.attn_v = m.optional_matrix(name("attn_v"), s.n_embd, n_kv);
    return;
  }
  if (s.architecture->fused_qkv_only || m.has(name("attn_qkv"))) {
    const Tensor qkv = m.matrix(name("attn_qkv"), s.n_embd, n_q + 2 * n_kv);
    w.attn_q = row_range(qkv, 0, n_q);
    w.attn_k = row_range(qkv, n_q, n_kv);
    w.attn_v = row_range(qkv, n_q + n_kv, n_kv);
    const Tensor b = m.optional_vector(bias_name(l, "attn_qkv"), n_q + 2 * n_kv);
    if (b.data != nullptr) {
      w.attn_q_b = value_range(b, 0, n_q);
      w.attn_k_b = value_range(b, n_q, n_kv);
      w.attn_v_b = value_range(b, n_q + n_kv, n_kv);
      return;
    }
  } else {
    w.attn_q = m.matrix(name("attn_q"), s.n_embd, n_q);
    w.attn_k = m.matrix(name("attn_k"), s.n_embd, n_kv);
    w.attn_v = m.matrix(name("attn_v"), s.n_embd, n_kv);
  }
  w.attn_q_b = m.optional_vector(bias_name(l, "attn_q"), n_q);
  w.attn_k_b = m.optional_vector(bias_name(l, "attn_k"), n_kv);
  w.attn_v_b = m.optional_vector(bias_name(l, "attn_v"), n_kv);
}

// The experts' gate and up slices: of ffn_gate_up_exps (each expert's gate
// rows, then its up rows), or of ffn_gate_exps and ffn_up_exps.
void expert_gate_up(const Mapper& m, const ModelSpec& s, int64_t l, std::vector<Tensor>& gate,
                    std::vector<Tensor>& up) {
  if (s.architecture->ffn_layout == FfnLayout::UpOnly) {  // ungated (Nemotron-H's): ffn_up_exps in gate's place
    gate = m.expert_matrices(layer_tensor_name(l, "ffn_up_exps"), s.n_embd, s.n_ff, s.n_expert);
    up.assign(gate.size(), Tensor{});
    return;
  }
  const std::string fused = layer_tensor_name(l, "ffn_gate_up_exps");
  if (m.has(fused)) {
    for (const Tensor& both : m.expert_matrices(fused, s.n_embd, 2 * s.n_ff, s.n_expert)) {
      gate.push_back(row_range(both, 0, s.n_ff));
      up.push_back(row_range(both, s.n_ff, s.n_ff));
    }
    return;
  }
  gate = m.expert_matrices(layer_tensor_name(l, "ffn_gate_exps"), s.n_embd, s.n_ff, s.n_expert);
  up = m.expert_matrices(layer_tensor_name(l, "ffn_up_exps"), s.n_embd, s.n_ff, s.n_expert);
}

// The router and the experts' slices (llama.cpp's merged *_exps tensors).
void map_experts(const Mapper& m, const ModelSpec& s, int64_t l, LayerWeights& w) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  w.ffn_gate_inp = m.matrix(name("ffn_gate_inp"), s.n_embd, s.n_expert);
  std::vector<Tensor> gate, up;
  expert_gate_up(m, s, l, gate, up);
  const auto down = m.expert_matrices(name("ffn_down_exps"), s.n_ff, s.n_embd, s.n_expert);
  w.experts.resize(static_cast<size_t>(s.n_expert));
  for (size_t e = 0; e < w.experts.size(); ++e) w.experts[e] = {gate[e], up[e], down[e], {}, {}, {}};
  if (s.architecture->expert_biases) {
    w.ffn_gate_inp_b = m.vector(bias_name(l, "ffn_gate_inp"), s.n_expert);
    const auto gate_b = m.expert_vectors(bias_name(l, "ffn_gate_exps"), s.n_ff, s.n_expert);
    const auto up_b = m.expert_vectors(bias_name(l, "ffn_up_exps"), s.n_ff, s.n_expert);
    const auto down_b = m.expert_vectors(bias_name(l, "ffn_down_exps"), s.n_embd, s.n_expert);
    for (size_t e = 0; e < w.experts.size(); ++e) {
      w.experts[e].gate_b = gate_b[e];
      w.experts[e].up_b = up_b[e];
      w.experts[e].down_b = down_b[e];
    }
  }
  // DeepSeek's form: the selection bias "blk.N.exp_probs_b.bias", where present.
  if (s.architecture->deepseek_experts) w.ffn_exp_probs_b = m.optional_vector(bias_name(l, "exp_probs_b"), s.n_expert);
  if (s.n_ff_shared > 0) {
    if (s.architecture->shared_expert) w.ffn_gate_inp_shexp = m.vector(name("ffn_gate_inp_shexp"), s.n_embd);
    const bool ungated = s.architecture->ffn_layout == FfnLayout::UpOnly;  // ffn_up_shexp in gate's place
    w.shared_expert = {m.matrix(name(ungated ? "ffn_up_shexp" : "ffn_gate_shexp"), s.n_embd, s.n_ff_shared),
                       ungated ? Tensor{} : m.matrix(name("ffn_up_shexp"), s.n_embd, s.n_ff_shared),
                       m.matrix(name("ffn_down_shexp"), s.n_ff_shared, s.n_embd),
                       {},
                       {},
                       {}};
  }
}

// Gemma 4's experts beside the dense FFN: gate and up fused (gate rows
// first) or separate, and per-expert output scales.
void map_gemma4_experts(const Mapper& m, const ModelSpec& s, int64_t l, LayerWeights& w) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  auto scale_name = [l](std::string_view t) { return "blk." + std::to_string(l) + "." + std::string(t) + ".scale"; };
  w.ffn_gate_inp = m.matrix(name("ffn_gate_inp"), s.n_embd, s.n_expert);
  w.ffn_gate_inp_s = m.vector(scale_name("ffn_gate_inp"), s.n_embd);
  w.ffn_pre_norm_2 = m.vector(name("pre_ffw_norm_2"), s.n_embd);
  w.ffn_post_norm_1 = m.vector(name("post_ffw_norm_1"), s.n_embd);
  w.ffn_post_norm_2 = m.vector(name("post_ffw_norm_2"), s.n_embd);
  std::vector<Tensor> gate, up;
  expert_gate_up(m, s, l, gate, up);
  const auto down = m.expert_matrices(name("ffn_down_exps"), s.n_ff, s.n_embd, s.n_expert);
  const Tensor down_scale = m.optional_vector(scale_name("ffn_down_exps"), s.n_expert);
  w.experts.resize(static_cast<size_t>(s.n_expert));
  for (size_t e = 0; e < w.experts.size(); ++e) {
    w.experts[e] = {gate[e], up[e], down[e], {}, {}, {}};
    if (down_scale.data != nullptr) w.experts[e].down_scale = static_cast<const float*>(down_scale.data)[e];
  }
}

// jina-bert-v2's optional norms (LayerWeights::attn_q_norm_b): q's and k's
// together, and attn_norm_2, each with its bias.
void map_jina_norms(const Mapper& m, const ModelSpec& s, int64_t l, LayerWeights& w) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  if (m.has(name("attn_q_norm")) || m.has(name("attn_k_norm"))) {
    if (s.n_embd_q() != s.n_embd || s.n_embd_kv() != s.n_embd) {
      throw m.error(name("attn_q_norm"), "is a norm of each token's whole q and k: needs n_head * head_dim = "
                                         "n_head_kv * head_dim = n_embd");
    }
    w.attn_q_norm = m.vector(name("attn_q_norm"), s.n_embd);
    w.attn_q_norm_b = m.vector(bias_name(l, "attn_q_norm"), s.n_embd);
    w.attn_k_norm = m.vector(name("attn_k_norm"), s.n_embd);
    w.attn_k_norm_b = m.vector(bias_name(l, "attn_k_norm"), s.n_embd);
  }
  w.attn_out_norm_2 = m.optional_vector(name("attn_norm_2"), s.n_embd);
  if (w.attn_out_norm_2.data != nullptr) w.attn_out_norm_2_b = m.vector(bias_name(l, "attn_norm_2"), s.n_embd);
}

void map_ffn(const Mapper& m, const ModelSpec& s, int64_t l, LayerWeights& w) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  if (s.architecture->gemma4_layers && s.has_experts()) map_gemma4_experts(m, s, l, w);  // and the dense FFN below
  if (s.layer_has_experts(l) && !s.architecture->gemma4_layers) {
    map_experts(m, s, l, w);
    return;
  }
  const int64_t n_ff = s.shape(l).n_ff;
  // jina-bert-v2: ffn_gate and ffn_up, or one ffn_up of 2 n_ff rows (gate first) where there is no ffn_gate.
  const bool jina_fused = s.architecture->bert_layers == BertLayers::Alibi && !m.has(name("ffn_gate"));
  switch (jina_fused ? FfnLayout::FusedGateUp : s.architecture->ffn_layout) {
    case FfnLayout::GateUp:
      w.ffn_gate = m.matrix(name("ffn_gate"), s.n_embd, n_ff);
      w.ffn_up = m.matrix(name("ffn_up"), s.n_embd, n_ff);
      w.ffn_gate_b = m.optional_vector(bias_name(l, "ffn_gate"), n_ff);
      w.ffn_up_b = m.optional_vector(bias_name(l, "ffn_up"), n_ff);
      break;
    case FfnLayout::FusedGateUp: {
      const Tensor gate_up = m.matrix(name("ffn_up"), s.n_embd, 2 * n_ff);
      w.ffn_gate = row_range(gate_up, 0, n_ff);
      w.ffn_up = row_range(gate_up, n_ff, n_ff);
      if (const Tensor b = m.optional_vector(bias_name(l, "ffn_up"), 2 * n_ff); b.data != nullptr) {
        w.ffn_gate_b = value_range(b, 0, n_ff), w.ffn_up_b = value_range(b, n_ff, n_ff);
      }
      break;
    }
    case FfnLayout::UpOnly:
      w.ffn_gate = m.matrix(name("ffn_up"), s.n_embd, n_ff);
      w.ffn_gate_b = m.optional_vector(bias_name(l, "ffn_up"), n_ff);
      break;
  }
  if (s.sparse_layout) {
    w.ffn_down_t = m.matrix(name("ffn_down_t"), s.n_embd, n_ff);
  } else {
    w.ffn_down = m.matrix(name("ffn_down"), n_ff, s.n_embd);
  }
  w.ffn_down_b = m.optional_vector(bias_name(l, "ffn_down"), s.n_embd);
}

// BERT's input tensors: position rows (Absolute only; one per trained
// position), the token-type rows (as many as the file has) and the
// embeddings' LayerNorm.
void map_bert_inputs(const gguf::GgufFile& file, const Mapper& m, const ModelSpec& s, LlamaWeights& w) {
  if (s.architecture->bert_layers == BertLayers::Absolute) {
    w.position_embd = m.matrix("position_embd.weight", s.n_embd, s.n_ctx_train);
  }
  if (const gguf::TensorInfo* types = file.find_tensor("token_types.weight"); types != nullptr) {
    // At least the row every token adds (a file with none is refused, naming the tensor).
    const int64_t n_types = std::max<int64_t>(1, types->ne.size() > 1 ? types->ne[1] : 0);
    w.token_types = m.matrix("token_types.weight", s.n_embd, n_types);
  }
  w.token_embd_norm = m.vector("token_embd_norm.weight", s.n_embd);
  w.token_embd_norm_b = m.vector("token_embd_norm.bias", s.n_embd);
}

// A reranker's head (rank pooling): cls and its bias (encoders'), then
// cls.output and its bias, each where the file has it.
void map_classifier(const Mapper& m, const ModelSpec& s, LlamaWeights& w) {
  if (s.architecture->bert_layers == BertLayers::Alibi) {  // jina-reranker-v1: cls {n_embd, n_cls_out} alone
    if (s.n_cls_out == 0) return;  // (no head: it does not rank)
    w.cls = m.matrix("cls.weight", s.n_embd, s.n_cls_out);
    w.cls_b = m.optional_vector("cls.bias", s.n_cls_out);
    return;
  }
  w.cls = m.optional_matrix("cls.weight", s.n_embd, s.n_embd);
  w.cls_b = m.optional_vector("cls.bias", s.n_embd);
  w.cls_norm = m.optional_vector("cls.norm.weight", s.n_embd);
  if (s.n_cls_out > 0) {
    w.cls_out = m.matrix("cls.output.weight", s.n_embd, s.n_cls_out);
    w.cls_out_b = m.optional_vector("cls.output.bias", s.n_cls_out);
  }
}

}  // namespace

kernels::Tensor tensor_view(const gguf::GgufFile& file, const std::string& name) {
  const auto& info = file.tensor(name);
  const auto bytes = file.tensor_data(info);
  kernels::Tensor t;
  t.data = const_cast<std::byte*>(bytes.data());  // read-only mapping; ops never write weights
  t.dtype = info.dtype;
  for (size_t i = 0; i < info.ne.size(); ++i) t.ne[i] = info.ne[i];
  t.row_bytes = kernels::row_bytes(info.dtype, info.ne[0]);
  t.memory = kernels::MemoryKind::MappedFile;
  return t;
}

LlamaWeights map_llama_weights(const gguf::GgufFile& file, const ModelSpec& s) {
  const Architecture& a = *s.architecture;
  const Mapper m(file);
  const bool norm_bias = a.norm == NormKind::Layer;  // LayerNorms with biases
  LlamaWeights w;
  w.token_embd = m.matrix("token_embd.weight", s.n_embd, s.n_vocab);
  // LFM2's files name the output norm token_embd_norm (llama.cpp's LLM_TENSOR_OUTPUT_NORM_LFM2).
  if (a.bert_layers != BertLayers::None) {  // no output norm: the last layer's ends the stack
    map_bert_inputs(file, m, s, w);
  } else {
    w.output_norm = m.vector(a.short_conv_layers ? "token_embd_norm.weight" : "output_norm.weight", s.n_embd);
    if (norm_bias) w.output_norm_b = m.vector("output_norm.bias", s.n_embd);
  }
  if (a.modern_bert_layers) w.token_embd_norm = m.vector("token_embd_norm.weight", s.n_embd);  // (no bias)
  w.output = s.tied_embeddings ? w.token_embd : m.matrix("output.weight", s.n_embd, s.n_vocab);
  w.output_b = m.optional_vector("output.bias", s.n_vocab);
  if (s.pooling == Pooling::Rank) map_classifier(m, s, w);
  if (a.rope_freqs) w.rope_freqs = m.optional_vector("rope_freqs.weight", s.n_rot / 2);
  if (a.longrope) {
    w.rope_factors_short = m.optional_vector("rope_factors_short.weight", s.n_rot / 2);
    w.rope_factors_long = m.optional_vector("rope_factors_long.weight", s.n_rot / 2);
  }
  w.layers.resize(static_cast<size_t>(s.n_layer));
  for (int64_t l = 0; l < s.n_layer; ++l) {
    auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    if (a.parallel_ffn_norm) {
      // GPT-NeoX: the parallel form's shared norm (the FFN's input) is the
      // file's ffn_norm; attention's own is its attn_norm.
      lw.attn_norm = m.vector(name("ffn_norm"), s.n_embd);
      lw.attn_norm_b = m.vector(bias_name(l, "ffn_norm"), s.n_embd);
      lw.attn_norm_2 = m.vector(name("attn_norm"), s.n_embd);
      lw.attn_norm_2_b = m.vector(bias_name(l, "attn_norm"), s.n_embd);
    } else {
      // (ModernBERT's layer 0 has none where the file has none: identity)
      if (a.pre_norms) {
        lw.attn_norm = a.modern_bert_layers && l == 0 ? m.optional_vector(name("attn_norm"), s.n_embd)
                                                      : m.vector(name("attn_norm"), s.n_embd);
      }
      if (norm_bias && a.pre_norms) {
        lw.attn_norm_b = m.vector(bias_name(l, "attn_norm"), s.n_embd);
        lw.attn_norm_2 = m.optional_vector(name("attn_norm_2"), s.n_embd);
        if (lw.attn_norm_2.data != nullptr) lw.attn_norm_2_b = m.vector(bias_name(l, "attn_norm_2"), s.n_embd);
      }
    }
    if (!s.has_mixer(l)) {  // Nemotron-H's FFN layer: its one norm is attn_norm
      lw.ffn_norm = lw.attn_norm;
      map_ffn(m, s, l, lw);
      continue;
    }
    if (s.attends_beside_mamba2) map_mamba2(m, s, l, lw);  // Falcon-H1: then attention and the FFN below
    if (s.is_recurrent(l) && !s.attends_beside_mamba2) {  // a delta net or Mamba-2 in place of attention
      if (s.short_conv_taps > 0) {
        map_short_conv(m, s, l, lw);
      } else if (s.runs_mamba1()) {
        map_mamba1(m, s, l, lw);
      } else if (s.runs_mamba2()) {
        map_mamba2(m, s, l, lw);
      } else {
        map_delta_net(m, s, l, lw);
      }
      if (!s.has_ffn(l)) continue;
      lw.ffn_norm = m.vector(name(a.ffn_norm_name), s.n_embd);
      map_ffn(m, s, l, lw);
      continue;
    }
    map_attention(m, s, l, lw);
    lw.attn_output = m.matrix(name("attn_output"), s.is_mla() ? s.n_embd_attn_out() : s.n_embd_q(l), s.n_embd);
    if (a.attn_output_bias) lw.attn_output_b = m.optional_vector(bias_name(l, "attn_output"), s.n_embd);
    if (a.qk_norm && (!a.qk_norm_optional || m.has(name("attn_q_norm")))) {
      const int64_t head_dim = s.shape(l).head_dim;
      lw.attn_q_norm = m.vector(name("attn_q_norm"), a.qk_norm_whole ? s.n_embd_q() : head_dim);
      lw.attn_k_norm = s.shares_kv(l) ? m.optional_vector(name("attn_k_norm"), head_dim)
                                      : m.vector(name("attn_k_norm"), a.qk_norm_whole ? s.n_embd_kv() : head_dim);
    }
    if (a.post_norms) {
      lw.attn_post_norm = m.vector(name("post_attention_norm"), s.n_embd);
      lw.ffn_post_norm = m.vector(name("post_ffw_norm"), s.n_embd);
    }
    if (a.bert_layers != BertLayers::None) {
      lw.attn_out_norm = m.vector(name("attn_output_norm"), s.n_embd);
      lw.attn_out_norm_b = m.vector(bias_name(l, "attn_output_norm"), s.n_embd);
      lw.layer_out_norm = m.vector(name("layer_output_norm"), s.n_embd);
      lw.layer_out_norm_b = m.vector(bias_name(l, "layer_output_norm"), s.n_embd);
    }
    if (a.bert_layers == BertLayers::Alibi) map_jina_norms(m, s, l, lw);
    if (a.attn_sinks) lw.attn_sinks = m.vector(name("attn_sinks"), s.n_head);
    if (a.attn_output_gate) lw.attn_gate = m.matrix(name("attn_gate"), s.n_embd, s.n_embd_q());
    if (!s.has_ffn(l)) continue;  // Nemotron-H's attention layer
    if (a.parallel_mamba2) {  // llama.cpp names it without .weight
      lw.ffn_norm = m.vector("blk." + std::to_string(l) + ".ffn_norm", s.n_embd);
    } else if (a.layer_form == LayerForm::Sequential && a.pre_norms) {
      lw.ffn_norm = m.vector(name(a.ffn_norm_name), s.n_embd);
      if (norm_bias) lw.ffn_norm_b = m.vector(bias_name(l, "ffn_norm"), s.n_embd);
    }
    map_ffn(m, s, l, lw);
    if (a.altup_layers) map_altup_layer(m, s, l, lw);
    if (a.gemma4_layers || a.altup_layers) {
      if (s.n_embd_per_layer > 0) {
        lw.per_layer_inp_gate = m.matrix(name("inp_gate"), s.n_embd, s.n_embd_per_layer);
        lw.per_layer_proj = m.matrix(name("proj"), s.n_embd_per_layer, s.n_embd);
        lw.per_layer_post_norm = m.vector(name("post_norm"), s.n_embd);
      }
      if (a.gemma4_layers) lw.layer_output_scale = m.optional_vector(name("layer_output_scale"), 1);
    }
  }
  if (a.bidirectional && m.has("dense_2.weight")) {
    const gguf::TensorInfo* d2 = file.find_tensor("dense_2.weight");
    const int64_t n_dense = d2->ne.size() > 1 ? d2->ne[1] : 0;
    w.dense_2 = m.matrix("dense_2.weight", s.n_embd, n_dense);
    w.dense_3 = m.matrix("dense_3.weight", n_dense, s.n_embd);
  }
  if (a.altup_layers) {
    const int64_t n_more = s.altup.n_streams - 1;
    w.altup_proj = m.expert_matrices("altup_proj.weight", s.n_embd, s.n_embd, n_more);
    w.altup_unembd_proj = m.expert_matrices("altup_unembd_proj.weight", s.n_embd, s.n_embd, n_more);
  }
  if ((a.gemma4_layers || a.altup_layers) && s.n_embd_per_layer > 0) {
    const int64_t n_all = s.n_embd_per_layer * s.n_layer;
    w.per_layer_token_embd = m.matrix("per_layer_token_embd.weight", n_all, s.n_vocab);
    w.per_layer_model_proj = m.matrix("per_layer_model_proj.weight", s.n_embd, n_all);
    w.per_layer_proj_norm = m.vector("per_layer_proj_norm.weight", s.n_embd_per_layer);
  }
  return w;
}

std::vector<NamedTensor> non_layer_tensors(LlamaWeights& w) {
  return {{&w.token_embd, "token_embd.weight"},
          {&w.output_norm, "output_norm.weight"},
          {&w.output, "output.weight"},
          {&w.output_norm_b, "output_norm.bias"},
          {&w.output_b, "output.bias"},
          {&w.rope_freqs, "rope_freqs.weight"},
          {&w.rope_factors_short, "rope_factors_short.weight"},
          {&w.rope_factors_long, "rope_factors_long.weight"},
          {&w.per_layer_token_embd, "per_layer_token_embd.weight"},
          {&w.per_layer_model_proj, "per_layer_model_proj.weight"},
          {&w.per_layer_proj_norm, "per_layer_proj_norm.weight"},
          {&w.position_embd, "position_embd.weight"},
          {&w.token_types, "token_types.weight"},
          {&w.token_embd_norm, "token_embd_norm.weight"},
          {&w.token_embd_norm_b, "token_embd_norm.bias"},
          {&w.cls, "cls.weight"},
          {&w.cls_b, "cls.bias"},
          {&w.cls_norm, "cls.norm.weight"},
          {&w.cls_out, "cls.output.weight"},
          {&w.cls_out_b, "cls.output.bias"}};
}

std::vector<NamedTensor> layer_tensors(LayerWeights& w, int64_t l) {
  auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
  auto bias = [l](std::string_view t) { return bias_name(l, t); };
  return {{&w.attn_norm, name("attn_norm")},
          {&w.attn_q, name("attn_q")},
          {&w.attn_k, name("attn_k")},
          {&w.attn_v, name("attn_v")},
          {&w.attn_output, name("attn_output")},
          {&w.ffn_norm, name("ffn_norm")},
          {&w.ffn_gate, name("ffn_gate"), true},
          {&w.ffn_up, name("ffn_up"), true},
          {&w.ffn_down, name("ffn_down"), true},
          {&w.ffn_down_t, name("ffn_down_t"), true},
          {&w.attn_norm_b, bias("attn_norm")},
          {&w.attn_norm_2, name("attn_norm_2")},
          {&w.attn_norm_2_b, bias("attn_norm_2")},
          {&w.ffn_norm_b, bias("ffn_norm")},
          {&w.attn_q_b, bias("attn_q")},
          {&w.attn_k_b, bias("attn_k")},
          {&w.attn_v_b, bias("attn_v")},
          {&w.attn_output_b, bias("attn_output")},
          {&w.ffn_gate_b, bias("ffn_gate")},
          {&w.ffn_up_b, bias("ffn_up")},
          {&w.ffn_down_b, bias("ffn_down")},
          {&w.attn_q_norm, name("attn_q_norm")},
          {&w.attn_k_norm, name("attn_k_norm")},
          {&w.attn_post_norm, name("post_attention_norm")},
          {&w.ffn_post_norm, name("post_ffw_norm")},
          {&w.attn_out_norm, name("attn_output_norm")},
          {&w.attn_out_norm_b, bias("attn_output_norm")},
          {&w.layer_out_norm, name("layer_output_norm")},
          {&w.layer_out_norm_b, bias("layer_output_norm")},
          {&w.attn_sinks, name("attn_sinks")},
          {&w.attn_gate, name("attn_gate")},
          {&w.per_layer_inp_gate, name("inp_gate")},
          {&w.per_layer_proj, name("proj")},
          {&w.per_layer_post_norm, name("post_norm")},
          {&w.layer_output_scale, name("layer_output_scale")},
          {&w.altup_router, name("altup_router")},
          {&w.altup_router_norm, name("altup_router_norm")},
          {&w.altup_predict_coef, name("altup_predict_coef")},
          {&w.altup_correct_coef, name("altup_correct_coef")},
          {&w.altup_correct_scale, name("altup_correct_scale")},
          {&w.laurel_l, name("laurel_l")},
          {&w.laurel_r, name("laurel_r")},
          {&w.laurel_post_norm, name("laurel_post_norm")},
          {&w.ffn_gate_inp_s, "blk." + std::to_string(l) + ".ffn_gate_inp.scale"},
          {&w.ffn_pre_norm_2, name("pre_ffw_norm_2")},
          {&w.ffn_post_norm_1, name("post_ffw_norm_1")},
          {&w.ffn_post_norm_2, name("post_ffw_norm_2")},
          {&w.dn_qkv, name("attn_qkv")},
          {&w.dn_z, name("attn_gate")},
          {&w.dn_conv, name("ssm_conv1d")},
          {&w.dn_dt_bias, bias("ssm_dt")},
          {&w.dn_a, "blk." + std::to_string(l) + ".ssm_a"},
          {&w.dn_beta, name("ssm_beta")},
          {&w.dn_alpha, name("ssm_alpha")},
          {&w.dn_norm, name("ssm_norm")},
          {&w.dn_out, name("ssm_out")},
          {&w.dn_qkvz, name("ssm_in")},
          {&w.dn_ba, name("ssm_ba")},
          {&w.m2_in, name("ssm_in")},
          {&w.m2_conv, name("ssm_conv1d")},
          {&w.m2_conv_b, bias("ssm_conv1d")},
          {&w.m2_dt_bias, bias("ssm_dt")},
          {&w.m2_a, "blk." + std::to_string(l) + ".ssm_a"},
          {&w.m2_d, "blk." + std::to_string(l) + ".ssm_d"},
          {&w.m2_norm, name("ssm_norm")},
          {&w.m2_out, name("ssm_out")},
          {&w.m1_x, name("ssm_x")},
          {&w.m1_dt, name("ssm_dt")},
          {&w.sc_in, name("shortconv.in_proj")},
          {&w.sc_conv, name("shortconv.conv")},
          {&w.sc_out, name("shortconv.out_proj")}};
}

}  // namespace tc::model
