// Reading ModelSpec from GGUF metadata, as llama.cpp's load_hparams and its
// per-architecture load_arch_hparams read the same keys.
#include "engine/model/model_spec.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/layer_shapes.h"
#include "engine/model/llama_weights.h"

namespace tc::model {
namespace {

using gguf::GgufFile;

// A positive integer hyperparameter `{arch}.<suffix>`.
int64_t positive_key(const GgufFile& file, const std::string& key) {
  const int64_t v = file.get_i64(key);
  if (v <= 0) throw file.error(key, "must be a positive integer, got " + std::to_string(v));
  return v;
}

int64_t positive_key(const GgufFile& file, const std::string& key, int64_t fallback) {
  if (!file.has(key)) return fallback;
  return positive_key(file, key);
}

double positive_f64(const GgufFile& file, const std::string& key, double fallback) {
  const double v = file.get_f64(key, fallback);
  if (!(v > 0.0) || !std::isfinite(v)) throw file.error(key, "must be a positive number");
  return v;
}

std::string allowed_forms(const Architecture& a) {
  std::string out;
  for (const FfnForm f : a.ffn_forms) out += (out.empty() ? "" : ", ") + std::string(ffn_form_name(f));
  return out;
}

// The FFN form: thermocline.ffn_form where present, else the
// architecture's first form (its first ReLU-family one for PWRI files).
FfnForm read_ffn_form(const GgufFile& file, const Architecture& a, bool pwri) {
  FfnForm form = a.ffn_forms.front();
  if (pwri) {
    for (const FfnForm f : a.ffn_forms) {
      if (is_relu_family(f)) {
        form = f;
        break;
      }
    }
  }
  if (!file.has(kFfnFormKey)) return form;
  const std::string name = file.get_string(kFfnFormKey);
  bool allowed = false;
  if (parse_ffn_form(name, form)) {
    for (const FfnForm f : a.ffn_forms) allowed |= f == form;
  }
  if (!allowed) {
    throw file.error(std::string(kFfnFormKey), "is '" + gguf::printable(name) + "', but architecture '" +
                                                   std::string(a.name) + "' is " + allowed_forms(a) +
                                                   (a.name == kArchBamboo ? " (relu(gate) * relu(up))" : ""));
  }
  return form;
}

void read_rope(const GgufFile& file, const std::string& p, const Architecture& a, ModelSpec& s) {
  s.rope_freq_base = positive_f64(file, p + "rope.freq_base", 10000.0);
  const std::string type = file.get_string(p + "rope.scaling.type", "linear");
  if (type == "none") {
    s.rope_scaling = RopeScaling::None;
  } else if (type == "linear") {
    s.rope_scaling = RopeScaling::Linear;
  } else if (type == "longrope") {
    s.rope_scaling = RopeScaling::LongRope;
  } else if (type == "yarn") {
    s.rope_scaling = RopeScaling::Yarn;
  } else {
    throw file.error(p + "rope.scaling.type",
                     "is '" + gguf::printable(type) + "', expected 'none', 'linear', 'longrope' or 'yarn'");
  }
  // As llama.cpp: rope.scaling.factor (or the older rope.scale_linear) gives
  // the scale whatever the type, but type none never scales.
  std::string factor_key = p + "rope.scaling.factor";
  if (!file.has(factor_key) && file.has(p + "rope.scale_linear")) factor_key = p + "rope.scale_linear";
  const double factor = file.get_f64(factor_key, 0.0);
  if (factor < 0.0 || !std::isfinite(factor)) throw file.error(factor_key, "must be >= 0");
  s.rope_freq_scale = s.rope_scaling == RopeScaling::None || factor == 0.0 ? 1.0 : 1.0 / factor;
  s.rope_attn_factor = positive_f64(file, p + "rope.scaling.attn_factor", 1.0);
  s.n_ctx_orig = positive_key(file, p + "rope.scaling.original_context_length", s.n_ctx_train);
  if (s.rope_scaling == RopeScaling::Yarn) {
    s.yarn_ext_factor = 1.0;
    s.yarn_beta_fast = positive_f64(file, p + "rope.scaling.yarn_beta_fast", 32.0);
    s.yarn_beta_slow = positive_f64(file, p + "rope.scaling.yarn_beta_slow", 1.0);
    // llama.cpp's attention factor: mscale(factor, 1) / mscale(factor,
    // yarn_log_multiplier) where the file has the multiplier (else
    // mscale(factor, 1)), with YaRN's own magnitude, 1 + 0.1 ln(factor)
    // (which the kernel applies), divided out, times rope.scaling.attn_factor.
    const double factor = 1.0 / s.rope_freq_scale;
    const auto mscale = [factor](double m) { return factor <= 1.0 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; };
    double log_mul = 0.0;
    if (a.yarn_log_mul_and_temperature) {
      const std::string key = p + "rope.scaling.yarn_log_multiplier";
      log_mul = file.get_f64(key, 0.0);
      if (!(log_mul >= 0.0) || !std::isfinite(log_mul)) throw file.error(key, "must be a number >= 0");
    }
    const double yarn_factor = log_mul != 0.0 ? mscale(1.0) / mscale(log_mul) : mscale(1.0);
    s.rope_attn_factor *= yarn_factor / (1.0 + 0.1 * std::log(factor));
  }
  if (a.yarn_log_mul_and_temperature) {
    const std::string key = p + "attention.temperature_scale";
    s.attn_temp_scale = file.get_f64(key, 0.0);
    if (!(s.attn_temp_scale >= 0.0) || !std::isfinite(s.attn_temp_scale)) {
      throw file.error(key, "must be a number >= 0");
    }
    s.attn_temp_floor = s.n_ctx_orig;
  }
}

// {arch}.rope.dimension_sections (Architecture::multimodal_rope): one to
// four non-negative counts of rotated pairs, padded with 0 as llama.cpp's
// get_key_or_arr reads them, together at most head_dim (ggml's bound).
void read_rope_sections(const GgufFile& file, const std::string& p, const Architecture& a, ModelSpec& s) {
  const std::string key = p + "rope.dimension_sections";
  if (!file.has(key)) {
    if (a.multimodal_rope == MultimodalRope::Required) throw file.error(key, "is missing");
    return;
  }
  if (a.multimodal_rope == MultimodalRope::Refused) {
    throw file.error(key, "is set: multimodal RoPE (M-RoPE) is not supported for architecture '" +
                              std::string(a.name) + "'");
  }
  const std::vector<int32_t> sections = file.get_i32_array(key);
  if (sections.empty() || sections.size() > s.rope_sections.size()) {
    throw file.error(key, "has " + std::to_string(sections.size()) + " entries, expected 1 to 4");
  }
  int64_t total = 0;
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i] < 0) throw file.error(key, "entry " + std::to_string(i) + " is negative");
    s.rope_sections[i] = sections[i];
    total += sections[i];
  }
  if (total == 0 || total > s.head_dim) {
    throw file.error(key, "sums to " + std::to_string(total) + ", expected 1 to head_dim " +
                              std::to_string(s.head_dim));
  }
}

// Which layers use the sliding window, and its size (llama.cpp's n_swa,
// set_swa_pattern and the per-architecture defaults).
void read_sliding_window(const GgufFile& file, const std::string& p, const Architecture& a, ModelSpec& s) {
  const SlidingWindowRule& rule = a.sliding_window;
  if (!rule.enabled) return;  // the architecture has none (llama.cpp ignores the key there)
  const std::string window_key = p + "attention.sliding_window";
  s.n_swa = rule.default_window;
  if (file.has(window_key)) {
    s.n_swa = file.get_i64(window_key);
    if (s.n_swa < 0) throw file.error(window_key, "must be >= 0");
    if (s.n_swa > 0 && rule.fixed_window > 0) s.n_swa = rule.fixed_window;
  }
  if (s.n_swa == 0) {
    if (a.rope_windowed_only && !a.rope_everywhere_without_window) {
      throw file.error(window_key, "is missing: " + s.arch + "'s windowed layers are the ones that take RoPE");
    }
    return;
  }
  s.swa_layers.assign(static_cast<size_t>(s.n_layer), false);
  const std::string pattern_key = p + "attention.sliding_window_pattern";
  const gguf::Value* pattern = file.find(pattern_key);
  if (pattern != nullptr && pattern->is_array()) {
    const auto& items = *pattern->as_array();
    if (static_cast<int64_t>(items.size()) != s.n_layer) {
      throw file.error(pattern_key, "has " + std::to_string(items.size()) + " entries, expected one per layer (" +
                                        std::to_string(s.n_layer) + ")");
    }
    for (size_t l = 0; l < items.size(); ++l) {
      int64_t v = 0;
      const bool* b = items[l].as_bool();
      if (b == nullptr && !items[l].to_i64(v)) throw file.error(pattern_key, "must hold booleans");
      s.swa_layers[l] = b != nullptr ? *b : v != 0;
    }
  } else {
    const int64_t period = pattern != nullptr ? file.get_i64(pattern_key) : rule.period;
    if (period < 0) throw file.error(pattern_key, "must be >= 0");
    for (int64_t l = 0; l < s.n_layer; ++l) {
      const int64_t at = l % std::max<int64_t>(period, 1);
      const bool windowed = rule.dense_first ? at != 0 : at < period - 1;
      s.swa_layers[static_cast<size_t>(l)] = period == 0 || windowed;
    }
  }
  if (rule.own_rope) {
    s.rope_freq_base_swa = positive_f64(file, p + "rope.freq_base_swa", 10000.0);
    s.rope_freq_scale_swa = 1.0;
  } else {
    s.rope_freq_base_swa = s.rope_freq_base;
    if (rule.reads_freq_base_swa) s.rope_freq_base_swa = positive_f64(file, p + "rope.freq_base_swa", s.rope_freq_base);
    s.rope_freq_scale_swa = rule.plain_rope ? 1.0 : s.rope_freq_scale;
  }
}

// ModernBERT's FFN form: {arch}.hidden_activation where present (GeGLU
// without it, as llama.cpp); thermocline.ffn_form, where present too, must
// agree.
void read_hidden_activation(const GgufFile& file, const std::string& p, ModelSpec& s) {
  const std::string key = p + "hidden_activation";
  if (!file.has(key)) return;
  const std::string name = file.get_string(key);
  FfnForm form = FfnForm::GeGLU;
  if (!hidden_activation_form(name, form)) {
    throw file.error(key, "is 'relu': llama.cpp applies it ungated to ffn_up's 2 n_ff rows, which ffn_down's n_ff "
                          "cannot take (gelu, silu or reglu run)");
  }
  if (file.has(kFfnFormKey) && form != s.ffn_form) {
    throw file.error(std::string(kFfnFormKey), "is '" + std::string(ffn_form_name(s.ffn_form)) + "', but " + key +
                                                   " '" + gguf::printable(name) + "' says " +
                                                   std::string(ffn_form_name(form)));
  }
  s.ffn_form = form;
}

// {arch}.expert_gating_func where present (absent or 0: the gating set so far).
void read_expert_gating_func(const GgufFile& file, const std::string& p, ModelSpec& s) {
  const std::string gating_key = p + "expert_gating_func";
  switch (file.get_i64(gating_key, 0)) {
    case 0: break;
    case 1: s.expert_gating = ExpertGating::Softmax; break;
    case 2: s.expert_gating = ExpertGating::Sigmoid; break;
    case 3: s.expert_gating = ExpertGating::SoftmaxOfChosen; break;
    default:
      throw file.error(gating_key, "is " + std::to_string(file.get_i64(gating_key)) +
                                       ": expected 1 (softmax), 2 (sigmoid) or 3 (softmax of the chosen)");
  }
}

// DeepSeek's form of a mixture (Architecture::deepseek_experts), as
// llama.cpp's glm4_moe and dots1 load_arch_hparams read it.
void read_deepseek_experts(const GgufFile& file, const std::string& p, const Architecture& a, ModelSpec& s) {
  const std::string lead_key = p + "leading_dense_block_count";
  s.n_layer_dense_lead = file.get_i64(lead_key, 0);
  if (s.n_layer_dense_lead < 0 || s.n_layer_dense_lead > s.n_layer) {
    throw file.error(lead_key, "is " + std::to_string(s.n_layer_dense_lead) + ", expected 0 to the " +
                                   std::to_string(s.n_layer) + " layers");
  }
  const std::string step_key = p + "interleave_moe_layer_step";
  if (file.get_i64(step_key, 1) != 1) {
    throw file.error(step_key, "is " + std::to_string(file.get_i64(step_key)) +
                                   ": experts in every step-th layer only are not supported (1: every layer)");
  }
  // expert_shared_count shared experts stored as one, each
  // expert_shared_feed_forward_length wide (default: an expert's width);
  // without the count, one where the width is named (ERNIE 4.5), else none.
  const std::string shared_key = p + "expert_shared_count";
  const std::string shared_width_key = p + "expert_shared_feed_forward_length";
  const int64_t shared = file.get_i64(shared_key, file.has(shared_width_key) ? 1 : 0);
  if (shared < 0 || shared > s.n_expert) {
    throw file.error(shared_key, "is " + std::to_string(shared) + ", expected 0 to expert_count");
  }
  s.n_ff_shared = positive_key(file, shared_width_key, s.n_ff) * shared;
  s.expert_weights_norm = file.get_bool(p + "expert_weights_norm", a.expert_weights_norm);
  const std::string scale_key = p + "expert_weights_scale";
  const double scale = file.get_f64(scale_key, 0.0);
  if (!(scale >= 0.0) || !std::isfinite(scale)) throw file.error(scale_key, "must be a number >= 0");
  s.expert_weights_scale = static_cast<float>(scale);
  // llama.cpp's rule for deepseek2 files without the key: GLM-4.7-Flash's
  // (47 or 48 layers, 154880 tokens) route by sigmoid, DeepSeek V2's by softmax.
  const auto* embd = file.find_tensor("token_embd.weight");
  const int64_t n_vocab = embd != nullptr ? embd->ne.back() : 0;
  if (a.mla && (s.n_layer == 47 || s.n_layer == 48) && n_vocab == 154880) s.expert_gating = ExpertGating::Sigmoid;
  read_expert_gating_func(file, p, s);
  const std::string groups_key = p + "expert_group_count";
  const std::string used_key = p + "expert_group_used_count";
  s.expert_groups = std::max<int64_t>(1, file.get_i64(groups_key, 1));
  if (s.expert_groups > 1) {
    if (s.n_expert % s.expert_groups != 0) {
      throw file.error(groups_key, "is " + std::to_string(s.expert_groups) + ", which does not divide expert_count " +
                                       std::to_string(s.n_expert));
    }
    s.expert_groups_used = positive_key(file, used_key);
    const int64_t per_group = s.n_expert / s.expert_groups;
    if (s.expert_groups_used > s.expert_groups || s.expert_groups_used * per_group < s.n_expert_used || per_group < 2) {
      throw file.error(used_key, "is " + std::to_string(s.expert_groups_used) + " of " + std::to_string(s.expert_groups) +
                                     " groups of " + std::to_string(per_group) + " experts: expected enough for " +
                                     std::to_string(s.n_expert_used) + " experts, and groups of 2 or more");
    }
  }
}

// Multi-head latent attention (Architecture::mla), as llama.cpp's
// deepseek2 load_arch_hparams and graph read it; after read_rope.
void read_mla(const GgufFile& file, const std::string& p, ModelSpec& s) {
  s.kv_lora_rank = positive_key(file, p + "attention.kv_lora_rank");
  const std::string q_rank_key = p + "attention.q_lora_rank";
  s.q_lora_rank = file.has(q_rank_key) ? positive_key(file, q_rank_key) : 0;
  const std::string k_mla_key = p + "attention.key_length_mla";
  const std::string key_length = p + "attention.key_length";
  const std::string value_length = p + "attention.value_length";
  const std::string head_count_kv = p + "attention.head_count_kv";
  if (!file.has(k_mla_key)) {
    // Converted before the split (one attn_kv_b): the keys describe the
    // decompressed heads, as multi-head attention; run absorbed all the same.
    s.mla_kv_b_unsplit = true;
    s.head_dim_k_mla = s.head_dim;
    // llama.cpp's default, n_embd / n_head (MiniCPM3's files name no value_length).
    s.head_dim_v_mla = positive_key(file, value_length, s.n_embd / s.n_head);
    if (s.n_head_kv != s.n_head) {
      throw file.error(head_count_kv, "is " + std::to_string(s.n_head_kv) + ", expected head_count " +
                                          std::to_string(s.n_head) + " in a file with one attn_kv_b");
    }
    s.n_head_kv = 1;
    s.head_dim = s.kv_lora_rank + s.n_rot;
  } else {
    s.head_dim_k_mla = positive_key(file, k_mla_key);
    s.head_dim_v_mla = positive_key(file, p + "attention.value_length_mla");
    if (s.head_dim != s.kv_lora_rank + s.n_rot) {
      throw file.error(key_length, "is " + std::to_string(s.head_dim) +
                                       ", expected kv_lora_rank + rope.dimension_count " +
                                       std::to_string(s.kv_lora_rank + s.n_rot) + " (the cached latent row)");
    }
    if (file.get_i64(value_length, 0) != s.kv_lora_rank) {
      throw file.error(value_length, "is " + std::to_string(file.get_i64(value_length, 0)) +
                                         ", expected kv_lora_rank " + std::to_string(s.kv_lora_rank));
    }
    if (s.n_head_kv != 1) {
      throw file.error(head_count_kv, "is " + std::to_string(s.n_head_kv) +
                                          ", expected 1 (the latent is one head shared by all)");
    }
  }
  if (s.head_dim_k_mla <= s.n_rot) {
    throw file.error(k_mla_key, "is " + std::to_string(s.head_dim_k_mla) + ", expected more than rope.dimension_count " +
                                    std::to_string(s.n_rot));
  }
  // llama.cpp's YaRN for deepseek2 (llama_context and the graph): the
  // file's yarn_log_multiplier is 0.1 mscale_all_dim; the rotation's own
  // magnitude is cancelled, and the scores take mscale^2 instead, mscale =
  // (1 + 0.1 ln(factor)) (1 + 0.1 mscale_all_dim ln(factor)) without the
  // multiplier's key, (1 + 0.1 mscale_all_dim ln(factor)) with it.
  const std::string log_mul_key = p + "rope.scaling.yarn_log_multiplier";
  const float log_mul = static_cast<float>(file.get_f64(log_mul_key, 0.0)) / 0.1f;
  if (!(log_mul >= 0.0f) || !std::isfinite(log_mul)) throw file.error(log_mul_key, "must be a number >= 0");
  const auto ln_factor = static_cast<float>(std::log(1.0 / s.rope_freq_scale));
  if (s.yarn_ext_factor != 0.0) {
    const float factor = 1.0f / static_cast<float>(s.rope_freq_scale);
    auto mscale = [factor](float m) { return factor <= 1.0f ? 1.0f : 0.1f * m * std::log(factor) + 1.0f; };
    const float file_attn_factor = static_cast<float>(file.get_f64(p + "rope.scaling.attn_factor", 1.0));
    const float yarn = log_mul != 0.0f ? 1.0f : mscale(1.0f);  // mscale(m) / mscale(m) with the multiplier
    s.rope_attn_factor = yarn / (1.0f + 0.1f * std::log(factor)) * file_attn_factor;
  }
  const std::string temperature_key = p + "attention.temperature_scale";
  if (file.get_f64(temperature_key, 0.0) != 0.0) {
    throw file.error(temperature_key, "is set: query temperature tuning under MLA (Mistral Large 3) is not supported");
  }
  if (s.architecture->minicpm_scale_defaults) {  // MiniCPM3's graph: 1 / sqrt(key_length) alone
    s.attn_scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim_k_mla));
    return;
  }
  const float attn_factor_org = static_cast<float>(s.rope_attn_factor) * (1.0f + 0.1f * ln_factor);
  const float mscale = attn_factor_org * (1.0f + 0.1f * log_mul * ln_factor);
  s.attn_scale = mscale * mscale / std::sqrt(static_cast<float>(s.head_dim_k_mla));
}

// The mixture of experts, as llama.cpp's load_hparams and the
// architecture's load_arch_hparams read it: expert_count (0 or absent: a
// dense FFN, where the architecture allows one), expert_used_count, and the
// expert's width.
void read_experts(const GgufFile& file, const std::string& p, const Architecture& a, ModelSpec& s) {
  if (a.experts == Experts::None) return;
  const std::string count_key = p + "expert_count";
  const int64_t n_expert = file.get_i64(count_key, 0);
  if (n_expert < 0 || n_expert > kMaxExperts) {
    throw file.error(count_key, "is " + std::to_string(n_expert) + ", expected 0 to " + std::to_string(kMaxExperts));
  }
  if (n_expert == 0) {
    if (a.experts == Experts::Required) {
      throw file.error(count_key, "is missing or 0; architecture '" + std::string(a.name) + "' is a mixture of experts");
    }
    return;
  }
  const std::string used_key = p + "expert_used_count";
  const int64_t used = positive_key(file, used_key);
  if (used > n_expert) {
    throw file.error(used_key, "is " + std::to_string(used) + ", more than " + count_key + " " +
                                   std::to_string(n_expert));
  }
  if (s.ffn_form != a.ffn_forms.front()) {
    throw file.error(std::string(kFfnFormKey), "is '" + std::string(ffn_form_name(s.ffn_form)) + "'; " + s.arch +
                                                   "'s experts are " +
                                                   std::string(ffn_form_name(a.ffn_forms.front())) + " only");
  }
  s.n_expert = n_expert;
  s.n_expert_used = used;
  s.expert_weights_norm = a.expert_weights_norm;
  s.expert_gating = a.expert_gating;
  if (a.reads_expert_gating_func) read_expert_gating_func(file, p, s);
  if (a.shared_expert) s.n_ff_shared = positive_key(file, p + "expert_shared_feed_forward_length", s.n_ff);
  if (a.experts == Experts::Required || a.deepseek_experts) {
    // llama.cpp's fallback without the key: feed_forward_length / expert_used_count.
    const int64_t fallback = std::max<int64_t>(1, s.n_ff / used);
    s.n_ff_dense = s.n_ff;
    s.n_ff = positive_key(file, p + "expert_feed_forward_length", fallback);
  }
  if (a.deepseek_experts) read_deepseek_experts(file, p, a, s);
  if (a.experts_where_routed) {
    s.expert_layers.assign(static_cast<size_t>(s.n_layer), false);
    bool any = false;
    for (int64_t l = 0; l < s.n_layer; ++l) {
      const bool routed = file.find_tensor(layer_tensor_name(l, "ffn_gate_inp")) != nullptr;
      s.expert_layers[static_cast<size_t>(l)] = routed;
      any = any || routed;
    }
    if (!any) throw file.error(count_key, "is set, but no layer has ffn_gate_inp.weight (a router)");
  }
}

// Granite's multipliers (llama.cpp's granite load_arch_hparams): the
// optional ones are 0 (unused) when absent; MiniCPM's defaults
// (Architecture::minicpm_scale_defaults) in their place.
void read_granite_scales(const GgufFile& file, const std::string& p, ModelSpec& s) {
  auto optional_scale = [&](const std::string& key) {
    const double v = file.get_f64(key, 0.0);
    if (!(v >= 0.0) || !std::isfinite(v)) throw file.error(key, "must be a number >= 0");
    return static_cast<float>(v);
  };
  const std::string logit_key = p + "logit_scale";
  const bool minicpm = s.architecture->minicpm_scale_defaults;
  if (!file.has(logit_key) && !minicpm) throw file.error(logit_key, "is missing (Granite's logits are divided by it)");
  // MiniCPM's own constants (its dim_model_base 256, scale_emb 12,
  // scale_depth 1.4) where an older file has no keys; with keys, as Granite.
  // As llama.cpp scales them: times the f32 reciprocal.
  s.logit_multiplier = file.has(logit_key) ? 1.0f / static_cast<float>(positive_f64(file, logit_key, 1.0))
                                           : 256.0f / static_cast<float>(s.n_embd);
  if (const float e = optional_scale(p + "embedding_scale"); e != 0.0f) s.embd_scale = e;
  if (minicpm && !file.has(p + "embedding_scale")) s.embd_scale = 12.0f;
  s.residual_scale = optional_scale(p + "residual_scale");
  if (minicpm && !file.has(p + "residual_scale")) s.residual_scale = 1.4f / std::sqrt(static_cast<float>(s.n_layer));
  if (!minicpm) s.attn_scale = optional_scale(p + "attention.scale");  // MiniCPM's loader reads none
  const std::string finetuned = p + "rope.scaling.finetuned";
  if (file.has(finetuned)) {
    const bool* rope = file.find(finetuned)->as_bool();
    if (rope == nullptr) throw file.error(finetuned, "must be a boolean");
    s.no_rope = !*rope;  // Granite's switch for RoPE (4.0-H: off)
  }
  // Granite MoE Shared: an ungated shared expert beside the routed ones.
  const std::string shared = p + "expert_shared_feed_forward_length";
  if (const int64_t n = file.get_i64(shared, 0); n != 0) {
    if (n < 0 || !s.has_experts()) throw file.error(shared, "must be > 0, and only with experts");
    s.n_ff_shared = n;
  }
}

}  // namespace

std::string_view architecture_for(FfnForm form, bool powerinfer_layout) {
  return powerinfer_layout && form == FfnForm::DReLU ? kArchBamboo : kArchLlama;
}

std::string layer_tensor_name(int64_t layer, std::string_view tensor) {
  return "blk." + std::to_string(layer) + "." + std::string(tensor) + ".weight";
}

ModelSpec read_model_spec(const GgufFile& file) {
  ModelSpec s;
  s.arch = file.get_string("general.architecture");
  s.architecture = find_architecture(s.arch);
  if (s.architecture == nullptr) {
    throw file.error("general.architecture", "is '" + gguf::printable(s.arch) +
                                                 "', not an architecture Thermocline runs (" +
                                                 supported_architecture_names() + ")");
  }
  const Architecture& a = *s.architecture;
  s.name = file.get_string("general.name", "");
  const std::string p = s.arch + ".";
  s.n_embd = positive_key(file, p + "embedding_length");
  s.n_layer = positive_key(file, p + "block_count");
  if (a.deepseek_experts || a.qwen35_layers) {
    // Multi-token prediction blocks after the model's own (GLM-4.5, Qwen 3.5): loaded
    // by llama.cpp for speculative decoding, never on the forward path.
    const std::string nextn_key = p + "nextn_predict_layers";
    const int64_t nextn = file.get_i64(nextn_key, 0);
    if (nextn < 0 || nextn >= s.n_layer) {
      throw file.error(nextn_key, "is " + std::to_string(nextn) + ", expected 0 to block_count - 1 (" +
                                      std::to_string(s.n_layer - 1) + ")");
    }
    s.n_layer -= nextn;
  }
  // Every layer has tensors of its own: a count beyond the file's tensors is
  // corrupt (and would size the per-layer tables from a made-up number).
  const auto n_tensors = static_cast<int64_t>(file.tensors().size() + file.unsupported_tensors().size());
  if (s.n_layer > n_tensors) {
    throw file.error(p + "block_count", "is " + std::to_string(s.n_layer) + ", more than the file's " +
                                            std::to_string(n_tensors) + " tensors (each layer has its own)");
  }
  if (a.name == "baichuan" && s.n_layer != 32) {
    // llama.cpp tells Baichuan's two graphs by layer count: 32 (7B) rotate,
    // 40 (13B) use ALiBi; others neither.
    throw file.error(p + "block_count", "is " + std::to_string(s.n_layer) +
                                            ": Baichuan runs here as the 7B's 32 layers with RoPE only (the 13B's "
                                            "40 use ALiBi, which is not supported)");
  }
  const std::string head_key = p + "attention.head_count";
  // Mamba alone (mamba, mamba2): the file's head count is 0 and no layer
  // attends. n_head is then 1, so that head_dim (n_embd) and the KV shapes
  // stay defined though no block reads them; a layer that would attend is
  // refused below, naming the key.
  const bool attentionless = a.single_block_layers && file.get_i64(head_key, 0) == 0;
  s.n_head = attentionless ? 1 : positive_key(file, head_key);
  if (a.gemma4_layers) {  // one value or one per layer: read_layer_shapes below
    const auto widths = per_layer_positive_key(file, p + "feed_forward_length", s.n_layer, 0);
    s.n_ff = *std::max_element(widths.begin(), widths.end());
    s.n_head_kv = s.n_head;
  } else if (a.single_block_layers) {  // per-layer counts say which block each layer is
    read_single_block_layers(file, p, s);
    s.no_rope = true;  // Nemotron-H attends without RoPE
    for (int64_t l = 0; attentionless && l < s.n_layer; ++l) {
      if (s.has_mixer(l) && !s.is_recurrent(l)) {
        throw file.error(head_key, "is 0, but layer " + std::to_string(l) + " attends");
      }
    }
  } else if (a.parallel_mamba2) {  // Mamba-2 beside attention in every layer
    s.n_ff = positive_key(file, p + "feed_forward_length");
    s.n_head_kv = positive_key(file, p + "attention.head_count_kv", s.n_head);
    read_parallel_mamba2(file, p, s);
  } else if (a.mamba2_layers || a.mamba1_layers || a.short_conv_layers) {  // 0 KV heads mark the recurrent layers
    s.n_ff = positive_key(file, p + "feed_forward_length");
    if (a.mamba1_layers) {  // Jamba
      read_mamba1(file, p, s);
      s.no_rope = true;
    } else if (a.mamba2_layers) {
      read_mamba2(file, p, s);
    } else {
      read_short_conv(file, p, s);
    }
  } else {
    s.n_ff = positive_key(file, p + "feed_forward_length");
    s.n_head_kv = positive_key(file, p + "attention.head_count_kv", s.n_head);
  }
  s.n_ctx_train = positive_key(file, p + "context_length");
  if (a.bert_layers == BertLayers::Absolute) s.no_rope = true;  // position_embd's rows in its place
  if (a.bert_layers == BertLayers::Alibi) s.no_rope = true, s.alibi_max_bias = 8.0f;  // llama.cpp's, read from no key
  if (s.n_head % s.n_head_kv != 0) {
    throw file.error(p + "attention.head_count_kv",
                     std::to_string(s.n_head_kv) + " does not divide head_count " + std::to_string(s.n_head));
  }
  const std::string key_length = p + "attention.key_length";
  if (!file.has(key_length) && s.n_embd % s.n_head != 0) {
    throw file.error(p + "attention.head_count", std::to_string(s.n_head) + " does not divide " + p +
                                                     "embedding_length " + std::to_string(s.n_embd) + " (and no " +
                                                     key_length + " gives the head size)");
  }
  s.head_dim = positive_key(file, key_length, s.n_embd / s.n_head);
  const std::string value_length = p + "attention.value_length";
  if (!a.mla && positive_key(file, value_length, s.head_dim) != s.head_dim) {
    throw file.error(value_length, "is " + std::to_string(file.get_i64(value_length)) + ", expected the key length " +
                                       std::to_string(s.head_dim) + " (separate key and value head sizes are not supported)");
  }
  s.n_rot = positive_key(file, p + "rope.dimension_count", s.head_dim);
  if (s.n_rot > s.head_dim || s.n_rot % 2 != 0) {
    throw file.error(p + "rope.dimension_count", "is " + std::to_string(s.n_rot) +
                                                     ", expected an even number <= head_dim " +
                                                     std::to_string(s.head_dim));
  }
  read_rope(file, p, a, s);
  if (a.rope_alpha && file.has(p + "rope.scaling.alpha")) {
    // As llama.cpp's hunyuan loader: in f32, over the head size.
    const std::string key = p + "rope.scaling.alpha";
    const auto alpha = static_cast<float>(positive_f64(file, key, 1.0));
    const auto dim = static_cast<float>(s.head_dim);
    if (s.head_dim <= 2) throw file.error(key, "needs a head size above 2");
    s.rope_freq_base = static_cast<float>(s.rope_freq_base) * std::pow(alpha, dim / (dim - 2.0f));
  }
  if (a.mla) read_mla(file, p, s);
  read_rope_sections(file, p, a, s);
  const std::string eps_key =
      p + (a.norm != NormKind::Rms ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon");
  s.rms_eps = file.get_f64(eps_key, 1e-5);
  if (!(s.rms_eps > 0.0 && s.rms_eps < 1.0)) throw file.error(eps_key, "must be in (0, 1)");

  s.sparse_layout = file.magic() == gguf::Magic::PWRI;
  s.ffn_form = read_ffn_form(file, a, s.sparse_layout);
  if (a.modern_bert_layers) read_hidden_activation(file, p, s);
  read_experts(file, p, a, s);
  if (s.has_experts() && s.sparse_layout) {
    throw file.error(p + "expert_count", "is set in a PowerInfer (PWRI) file, whose FFN is one dense ReLU FFN");
  }

  if (a.attn_softcap > 0.0f) {
    s.attn_softcap = static_cast<float>(positive_f64(file, p + "attn_logit_softcapping", a.attn_softcap));
  }
  if (a.reads_final_softcap) {
    const std::string key = p + "final_logit_softcapping";
    s.final_softcap = static_cast<float>(file.get_f64(key, a.final_softcap));
    if (!(s.final_softcap >= 0.0f) || !std::isfinite(s.final_softcap)) throw file.error(key, "must be >= 0");
  }
  if (a.embd_scale) s.embd_scale = std::sqrt(static_cast<float>(s.n_embd));
  if (a.embd_query_scale_n_layer > 0) {
    // Gemma scales the queries itself; 27B by 1/sqrt(n_embd / n_head).
    const int64_t d = s.n_layer == a.embd_query_scale_n_layer ? s.n_embd / s.n_head : s.head_dim;
    s.attn_scale = 1.0f / std::sqrt(static_cast<float>(d));
  }
  if (a.granite_scales) read_granite_scales(file, p, s);
  if (a.logit_scale_multiplies && file.has(p + "logit_scale")) {
    s.logit_multiplier = static_cast<float>(positive_f64(file, p + "logit_scale", 1.0));
  }
  if (a.parallel_ffn_norm) {
    const std::string key = p + "use_parallel_residual";
    if (!file.get_bool(key, true)) {
      throw file.error(key, "is false: GPT-NeoX's sequential form is not supported (only its parallel residual)");
    }
  }
  if (!a.refused_layer_tensor.empty()) {
    const std::string name = layer_tensor_name(0, a.refused_layer_tensor);
    if (file.find_tensor(name) != nullptr) {
      throw file.error(name, "is present: per-head q/k LayerNorms (Command R+, StableLM 2 12B) are not supported");
    }
  }
  read_sliding_window(file, p, a, s);
  if (a.gemma4_layers || a.altup_layers) read_layer_shapes(file, p, s);
  if (a.altup_layers) read_altup(file, p, s);
  if (a.qwen35_layers) read_delta_net(file, p, s);
  if (a.fixed_attn_scale > 0.0f) s.attn_scale = a.fixed_attn_scale;
  switch (file.get_i64(p + "pooling_type", 0)) {
    case 1: s.pooling = Pooling::Mean; break;
    case 2: s.pooling = Pooling::Cls; break;
    case 4: {  // rank: an encoder's head on its first token, or Qwen3-Reranker's on the last
      const bool qwen3 = s.arch == "qwen3" || s.arch == "qwen3vl";
      s.pooling = a.bidirectional || qwen3 ? Pooling::Rank : Pooling::Last;
      s.rank_by_last_token = qwen3;
      break;
    }
    default: s.pooling = Pooling::Last; break;
  }
  if (s.pooling == Pooling::Rank) {
    if (const gguf::TensorInfo* head = file.find_tensor("cls.output.weight"); head != nullptr) {
      s.n_cls_out = head->ne.size() > 1 ? head->ne[1] : 1;
    } else if (const gguf::TensorInfo* cls = file.find_tensor("cls.weight");
               cls != nullptr && a.bert_layers == BertLayers::Alibi) {  // jina's one-layer head: cls gives the scores
      s.n_cls_out = cls->ne.size() > 1 ? cls->ne[1] : 1;
    }
  }

  const auto& embd = file.tensor("token_embd.weight");
  if (embd.ne.size() != 2 || embd.ne[0] != s.n_embd) {
    throw file.error("token_embd.weight", "has shape " + embd.shape_string() + ", expected [" +
                                              std::to_string(s.n_embd) + ", n_vocab]");
  }
  s.n_vocab = embd.ne[1];
  s.tied_embeddings = a.head_is_token_embd || file.find_tensor("output.weight") == nullptr;
  return s;
}

int64_t ModelSpec::widest_n_embd_q() const {
  int64_t widest = n_embd_q();
  for (int64_t l = 0; l < static_cast<int64_t>(layer_shapes.size()); ++l) widest = std::max(widest, n_embd_q(l));
  return widest;
}

int64_t ModelSpec::widest_n_embd_kv() const {
  int64_t widest = n_embd_kv();
  for (int64_t l = 0; l < static_cast<int64_t>(layer_shapes.size()); ++l) widest = std::max(widest, n_embd_kv(l));
  return widest;
}

int64_t ModelSpec::widest_n_ff() const {
  int64_t widest = dense_ffn_width();
  for (const LayerShape& l : layer_shapes) widest = std::max(widest, l.n_ff);
  return widest;
}

Pooling ModelSpec::rank_rows() const {
  if (rank_by_last_token) return Pooling::Last;
  return architecture->modern_bert_layers ? Pooling::Mean : Pooling::Cls;
}

std::string_view pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Rank: return "rank";
    case Pooling::Last: break;
  }
  return "last";
}

bool parse_pooling(std::string_view name, Pooling& out) {
  for (const Pooling p : {Pooling::Last, Pooling::Mean, Pooling::Cls}) {
    if (name == pooling_name(p)) {
      out = p;
      return true;
    }
  }
  return false;
}

void validate_model_tensors(const GgufFile& file, const ModelSpec& s) {
  // Mapping checks every tensor the spec needs, as it maps it.
  (void)map_llama_weights(file, s);
}

}  // namespace tc::model
