// Writing a dense Gemma 4 file (llama.cpp's gemma4 keys and tensor names).
#include "profiler/make_gemma4.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"

namespace tc::profiler {
namespace {

using kernels::DType;

// The shapes a layer gets in the file.
struct Gemma4Layer {
  bool global = false;  // full attention (else windowed)
  bool shared = false;  // attends over an earlier layer's cache
  int64_t head_dim = 0;
  int64_t n_head_kv = 0;
  int64_t n_ff = 0;
};

int64_t period_of(const MakeModelOptions& o) { return o.swa_pattern > 0 ? o.swa_pattern : 3; }

// The windowed layers' head size; the global layers' is twice this.
int64_t swa_head_dim(const MakeModelOptions& o) { return o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head; }

std::vector<Gemma4Layer> gemma4_layers(const MakeModelOptions& o) {
  const int64_t head_dim = swa_head_dim(o);
  const int64_t period = period_of(o);
  std::vector<Gemma4Layer> layers(static_cast<size_t>(o.n_layer));
  for (int64_t l = 0; l < o.n_layer; ++l) {
    Gemma4Layer& g = layers[static_cast<size_t>(l)];
    g.global = l % period == period - 1 || l == o.n_layer - 1;  // the last layer is global, as Gemma's
    g.shared = l >= o.n_layer - o.shared_kv_layers;
    g.head_dim = g.global ? 2 * head_dim : head_dim;
    g.n_head_kv = g.global ? std::max<int64_t>(1, o.n_head_kv / 2) : o.n_head_kv;
    g.n_ff = g.shared ? 2 * o.n_ff : o.n_ff;  // the shared layers' double-wide FFN (E2B's)
  }
  return layers;
}

gguf::Value u32_array(const std::vector<Gemma4Layer>& layers, int64_t Gemma4Layer::*field) {
  gguf::Value::Array items;
  for (const Gemma4Layer& g : layers) items.emplace_back(static_cast<uint32_t>(g.*field));
  return gguf::Value::array(gguf::ValueType::UINT32, std::move(items));
}

}  // namespace

void check_gemma4_options(const MakeModelOptions& o, DType base, DType heavy) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("gemma4: " + what);
  };
  require(o.shared_kv_layers >= 0 && o.n_embd_per_layer >= 0, "--shared-kv-layers and --n-embd-per-layer must be >= 0");
  const std::vector<Gemma4Layer> layers = gemma4_layers(o);
  const int64_t n_kv = o.n_layer - o.shared_kv_layers;
  if (o.shared_kv_layers > 0) {
    require(n_kv >= 2, "--shared-kv-layers leaves fewer than 2 layers with a cache of their own");
    // llama.cpp's rule: a windowed shared layer reads layer n_kv - 2, a global one n_kv - 1.
    require(layers[static_cast<size_t>(n_kv - 1)].global && !layers[static_cast<size_t>(n_kv - 2)].global,
            "with --swa-pattern " + std::to_string(period_of(o)) + ", the last layer with its own cache (" +
                std::to_string(n_kv - 1) + ") must be global and the one before it windowed");
  }
  for (const DType t : {base, heavy}) {
    const int64_t block = kernels::dtype_traits(t).block_size;
    for (const Gemma4Layer& g : layers) {
      require((o.n_head * g.head_dim) % block == 0 && g.n_ff % block == 0,
              "head and FFN widths must be whole blocks of " + std::string(kernels::dtype_name(t)));
    }
    require(o.n_embd_per_layer % block == 0, "--n-embd-per-layer must be a multiple of " + std::to_string(block));
    require(o.n_expert == 0 || (o.n_ff / 2) % block == 0,
            "the experts' width (--n-ff / 2) must be a multiple of " + std::to_string(block));
  }
}

void write_gemma4_model(const MakeModelOptions& o, DType base, DType heavy, gguf::GgufWriter& w,
                        const RandomTensorAdder& add) {
  const std::vector<Gemma4Layer> layers = gemma4_layers(o);
  const std::string p = "gemma4.";
  const int64_t swa_dim = swa_head_dim(o), global_dim = 2 * swa_dim;
  w.set(p + "feed_forward_length", u32_array(layers, &Gemma4Layer::n_ff));
  w.set(p + "attention.head_count_kv", u32_array(layers, &Gemma4Layer::n_head_kv));
  w.set(p + "attention.key_length", gguf::Value(static_cast<uint32_t>(global_dim)));
  w.set(p + "attention.value_length", gguf::Value(static_cast<uint32_t>(global_dim)));
  w.set(p + "attention.key_length_swa", gguf::Value(static_cast<uint32_t>(swa_dim)));
  w.set(p + "attention.value_length_swa", gguf::Value(static_cast<uint32_t>(swa_dim)));
  w.set(p + "rope.dimension_count", gguf::Value(static_cast<uint32_t>(global_dim)));
  w.set(p + "rope.dimension_count_swa", gguf::Value(static_cast<uint32_t>(swa_dim)));
  w.set(p + "rope.freq_base_swa", gguf::Value(10000.0f));
  w.set(p + "attention.sliding_window",
        gguf::Value(static_cast<uint32_t>(o.sliding_window > 0 ? o.sliding_window : 512)));
  gguf::Value::Array pattern;
  for (const Gemma4Layer& g : layers) pattern.emplace_back(!g.global);
  w.set(p + "attention.sliding_window_pattern", gguf::Value::array(gguf::ValueType::BOOL, std::move(pattern)));
  w.set(p + "attention.shared_kv_layers", gguf::Value(static_cast<uint32_t>(o.shared_kv_layers)));
  w.set(p + "embedding_length_per_layer_input", gguf::Value(static_cast<uint32_t>(o.n_embd_per_layer)));
  const int64_t n_ff_exp = o.n_ff / 2;  // an expert's width (26B A4B's 704 beside a 2112-wide dense FFN)
  if (o.n_expert > 0) w.set(p + "expert_feed_forward_length", gguf::Value(static_cast<uint32_t>(n_ff_exp)));

  auto sd_for = [&](int64_t fan_in) {
    return o.weight_scale > 0.0f ? o.weight_scale : 1.0f / std::sqrt(static_cast<float>(fan_in));
  };
  auto matrix = [&](const std::string& name, DType t, int64_t n_cols, int64_t n_rows) {
    add(name, t, {n_cols, n_rows}, 0.0f, sd_for(n_cols));
  };
  auto norm = [&](const std::string& name, int64_t n) { add(name, DType::F32, {n}, 1.0f, 0.1f); };
  const int64_t n_pl = o.n_embd_per_layer;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    const Gemma4Layer& g = layers[static_cast<size_t>(l)];
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    const int64_t n_q = o.n_head * g.head_dim, n_kv = g.n_head_kv * g.head_dim;
    norm(name("attn_norm"), o.n_embd);
    matrix(name("attn_q"), base, o.n_embd, n_q);
    norm(name("attn_q_norm"), g.head_dim);
    if (!g.shared) {
      matrix(name("attn_k"), base, o.n_embd, n_kv);
      if (!g.global) matrix(name("attn_v"), heavy, o.n_embd, n_kv);  // global layers: values from attn_k
      norm(name("attn_k_norm"), g.head_dim);
    }
    matrix(name("attn_output"), base, n_q, o.n_embd);
    norm(name("post_attention_norm"), o.n_embd);
    norm(name("ffn_norm"), o.n_embd);
    matrix(name("ffn_gate"), base, o.n_embd, g.n_ff);
    matrix(name("ffn_up"), base, o.n_embd, g.n_ff);
    matrix(name("ffn_down"), heavy, g.n_ff, o.n_embd);
    norm(name("post_ffw_norm"), o.n_embd);
    if (o.n_expert > 0) {  // the mixture beside the dense FFN; the router in f32, as llama.cpp's quantizer leaves it
      matrix(name("ffn_gate_inp"), DType::F32, o.n_embd, o.n_expert);
      add("blk." + std::to_string(l) + ".ffn_gate_inp.scale", DType::F32, {o.n_embd}, 1.0f, 0.2f);
      norm(name("pre_ffw_norm_2"), o.n_embd);
      norm(name("post_ffw_norm_1"), o.n_embd);
      norm(name("post_ffw_norm_2"), o.n_embd);
      add(name("ffn_gate_up_exps"), base, {o.n_embd, 2 * n_ff_exp, o.n_expert}, 0.0f, sd_for(o.n_embd));
      add(name("ffn_down_exps"), heavy, {n_ff_exp, o.n_embd, o.n_expert}, 0.0f, sd_for(n_ff_exp));
      add("blk." + std::to_string(l) + ".ffn_down_exps.scale", DType::F32, {o.n_expert}, 1.0f, 0.2f);
    }
    if (n_pl > 0) {
      matrix(name("inp_gate"), base, o.n_embd, n_pl);
      matrix(name("proj"), base, n_pl, o.n_embd);
      norm(name("post_norm"), o.n_embd);
    }
    add(name("layer_output_scale"), DType::F32, {1}, 0.8f, 0.1f);
  }
  // Proportional RoPE on the global layers: factors about 2 (frequencies slowed), never near 0.
  add("rope_freqs.weight", DType::F32, {global_dim / 2}, 2.0f, 0.25f);
  if (n_pl > 0) {
    const int64_t n_all = n_pl * o.n_layer;
    add("per_layer_token_embd.weight", base, {n_all, o.n_vocab}, 0.0f, 1.0f);
    matrix("per_layer_model_proj.weight", base, o.n_embd, n_all);
    norm("per_layer_proj_norm.weight", n_pl);
  }
}

}  // namespace tc::profiler
