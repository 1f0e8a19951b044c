// Per-layer shapes from GGUF metadata: Gemma 4's (llama.cpp's load_hparams
// get_key_or_arr, gemma4's load_arch_hparams and its KV cache reuse rule)
// and Qwen 3.5's delta net layers (qwen35's load_arch_hparams).
#include "engine/model/layer_shapes.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace tc::model {
namespace {

int64_t positive_integer(const gguf::GgufFile& file, const std::string& key) {
  const int64_t v = file.get_i64(key);
  if (v <= 0) throw file.error(key, "must be a positive integer, got " + std::to_string(v));
  return v;
}

}  // namespace

std::vector<int64_t> per_layer_positive_key(const gguf::GgufFile& file, const std::string& key, int64_t n_layer,
                                            int64_t fallback) {
  const gguf::Value* value = file.find(key);
  if (value == nullptr) {
    if (fallback <= 0) throw file.error(key, "is missing");
    return std::vector<int64_t>(static_cast<size_t>(n_layer), fallback);
  }
  std::vector<int64_t> out;
  if (value->is_array()) {
    const auto& items = *value->as_array();
    if (static_cast<int64_t>(items.size()) != n_layer) {
      throw file.error(key, "has " + std::to_string(items.size()) + " entries, expected one per layer (" +
                                std::to_string(n_layer) + ")");
    }
    for (const gguf::Value& item : items) {
      int64_t v = 0;
      if (!item.to_i64(v)) throw file.error(key, "must hold integers");
      out.push_back(v);
    }
  } else {
    out.assign(static_cast<size_t>(n_layer), file.get_i64(key));
  }
  for (const int64_t v : out) {
    if (v <= 0) throw file.error(key, "must hold positive integers, got " + std::to_string(v));
  }
  return out;
}

void read_layer_shapes(const gguf::GgufFile& file, const std::string& p, ModelSpec& s) {
  const std::vector<int64_t> n_ff = per_layer_positive_key(file, p + "feed_forward_length", s.n_layer, 0);
  const std::string kv_heads_key = p + "attention.head_count_kv";
  const std::vector<int64_t> n_head_kv = per_layer_positive_key(file, kv_heads_key, s.n_layer, s.n_head);
  const std::string key_swa = p + "attention.key_length_swa";
  const int64_t head_dim_swa = file.has(key_swa) ? file.get_i64(key_swa) : s.head_dim;
  if (head_dim_swa <= 0) throw file.error(key_swa, "must be a positive integer");
  const std::string value_swa = p + "attention.value_length_swa";
  if (file.has(value_swa) && file.get_i64(value_swa) != head_dim_swa) {
    throw file.error(value_swa, "is " + std::to_string(file.get_i64(value_swa)) + ", expected key_length_swa " +
                                    std::to_string(head_dim_swa) +
                                    " (separate key and value head sizes are not supported)");
  }
  const std::string rot_swa_key = p + "rope.dimension_count_swa";
  const int64_t n_rot_swa = file.has(rot_swa_key) ? file.get_i64(rot_swa_key) : std::min(s.n_rot, head_dim_swa);
  if (n_rot_swa <= 0 || n_rot_swa > head_dim_swa || n_rot_swa % 2 != 0) {
    throw file.error(rot_swa_key, "is " + std::to_string(n_rot_swa) + ", expected an even number <= key_length_swa " +
                                      std::to_string(head_dim_swa));
  }
  const std::string shared_key = p + "attention.shared_kv_layers";
  // Gemma 3n: llama.cpp ignores the key and keeps the first 20 layers' caches.
  const bool altup = s.architecture->altup_layers;
  const int64_t n_shared =
      altup ? std::max<int64_t>(0, s.n_layer - AltUpShape::kKvLayers) : file.get_i64(shared_key, 0);
  const int64_t n_kv_layers = s.n_layer - n_shared;
  if (n_shared < 0 || (n_shared > 0 && n_kv_layers < 2)) {
    throw file.error(shared_key, "is " + std::to_string(n_shared) + ", expected 0 to block_count - 2 (" +
                                     std::to_string(s.n_layer - 2) + ")");
  }
  const std::string per_layer_key = p + "embedding_length_per_layer_input";
  s.n_embd_per_layer = file.get_i64(per_layer_key, altup ? 256 : 0);  // Gemma 3n's 256 where absent
  if (s.n_embd_per_layer < 0) throw file.error(per_layer_key, "must be >= 0");

  s.layer_shapes.resize(static_cast<size_t>(s.n_layer));
  int64_t global_kv_heads = 0;
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const auto i = static_cast<size_t>(l);
    const bool swa = s.is_swa(l);
    if (s.n_head % n_head_kv[i] != 0) {
      throw file.error(kv_heads_key, "is " + std::to_string(n_head_kv[i]) + " for layer " + std::to_string(l) +
                                         ", which does not divide head_count " + std::to_string(s.n_head));
    }
    LayerShape& shape = s.layer_shapes[i];
    shape = {n_head_kv[i], swa ? head_dim_swa : s.head_dim, swa ? n_rot_swa : s.n_rot, n_ff[i], l};
    // llama.cpp's reuse rule: the last cached layer of the same kind, the
    // global one last and a windowed one before it.
    if (l >= n_kv_layers) shape.kv_layer = n_kv_layers - (swa ? 2 : 1);
    if (global_kv_heads == 0 && !swa) global_kv_heads = n_head_kv[i];
  }
  for (int64_t l = n_kv_layers; l < s.n_layer; ++l) {
    const LayerShape& shape = s.layer_shapes[static_cast<size_t>(l)];
    const LayerShape& source = s.layer_shapes[static_cast<size_t>(shape.kv_layer)];
    if (s.is_swa(shape.kv_layer) != s.is_swa(l) || source.n_head_kv != shape.n_head_kv) {
      throw file.error(shared_key, "is " + std::to_string(n_shared) + ": layer " + std::to_string(l) +
                                       " would attend over layer " + std::to_string(shape.kv_layer) +
                                       "'s cache, which is of another kind (windowed or not) or head count");
    }
  }
  s.n_head_kv = global_kv_heads > 0 ? global_kv_heads : n_head_kv.front();
  s.n_ff = *std::max_element(n_ff.begin(), n_ff.end());
  // With experts (read_experts, before): n_ff is an expert's width, the
  // layer shapes' the dense FFN's.
  if (s.has_experts()) {
    const std::string key = p + "expert_feed_forward_length";
    s.n_ff = file.get_i64(key);
    if (s.n_ff <= 0) throw file.error(key, "must be a positive integer, got " + std::to_string(s.n_ff));
  }
}

void read_altup(const gguf::GgufFile& file, const std::string& p, ModelSpec& s) {
  const std::string streams_key = p + "altup.num_inputs";
  s.altup.n_streams = file.get_i64(streams_key, 4);
  if (s.altup.n_streams < 2) throw file.error(streams_key, "must be at least 2");
  const std::string active_key = p + "altup.active_idx";
  if (const int64_t active = file.get_i64(active_key, 0); active != 0) {
    throw file.error(active_key, "is " + std::to_string(active) + ": only stream 0 active is supported");
  }
  if (s.n_embd_per_layer <= 0) throw file.error(p + "embedding_length_per_layer_input", "must be positive");
  s.altup.laurel_rank = 64;
  s.altup.n_sparse_layers = std::min<int64_t>(10, s.n_layer);
}

void read_delta_net(const gguf::GgufFile& file, const std::string& p, ModelSpec& s) {
  DeltaNetShape& d = s.delta_net;
  d.conv_kernel = positive_integer(file, p + "ssm.conv_kernel");
  d.n_k_heads = positive_integer(file, p + "ssm.group_count");
  d.n_v_heads = positive_integer(file, p + "ssm.time_step_rank");
  d.head_dim = positive_integer(file, p + "ssm.state_size");
  d.grouped_heads = s.architecture->qwen3next_delta_net;
  const std::string inner_key = p + "ssm.inner_size";
  if (positive_integer(file, inner_key) != d.value_dim()) {
    throw file.error(inner_key, "is " + std::to_string(file.get_i64(inner_key)) + ", expected time_step_rank x "
                                "state_size " + std::to_string(d.value_dim()) + " (value heads as wide as key heads)");
  }
  if (d.n_v_heads % d.n_k_heads != 0) {
    throw file.error(p + "ssm.group_count", "is " + std::to_string(d.n_k_heads) + ", which does not divide "
                                            "ssm.time_step_rank " + std::to_string(d.n_v_heads));
  }
  s.recurrent_layers.assign(static_cast<size_t>(s.n_layer), false);
  const std::string layers_key = p + "attention.recurrent_layers";
  if (const gguf::Value* layers = file.find(layers_key); layers != nullptr) {
    // One entry per block, multi-token prediction blocks included.
    const gguf::Value::Array* items = layers->as_array();
    if (items == nullptr || static_cast<int64_t>(items->size()) < s.n_layer) {
      throw file.error(layers_key, "must hold a boolean per layer (" + std::to_string(s.n_layer) + ")");
    }
    for (int64_t l = 0; l < s.n_layer; ++l) {
      const gguf::Value& item = (*items)[static_cast<size_t>(l)];
      int64_t v = 0;
      const bool* b = item.as_bool();
      if (b == nullptr && !item.to_i64(v)) throw file.error(layers_key, "must hold booleans");
      s.recurrent_layers[static_cast<size_t>(l)] = b != nullptr ? *b : v != 0;
    }
  } else {
    const std::string interval_key = p + "full_attention_interval";
    const int64_t interval = file.get_i64(interval_key, 4);
    if (interval <= 0) throw file.error(interval_key, "must be a positive integer");
    for (int64_t l = 0; l < s.n_layer; ++l) s.recurrent_layers[static_cast<size_t>(l)] = (l + 1) % interval != 0;
  }
}

namespace {

// head_count_kv, one value or one per layer, 0 marking the recurrent layers
// (s.recurrent_layers, left empty where there are none); the attention
// layers' counts alike (s.n_head_kv).
// A count key, one value or one per layer, each >= 0.
std::vector<int64_t> layer_counts(const gguf::GgufFile& file, const std::string& key, int64_t n_layer) {
  const gguf::Value* value = file.find(key);
  if (value == nullptr) throw file.error(key, "is missing (0 marks the layers without that block)");
  std::vector<int64_t> out(static_cast<size_t>(n_layer));
  if (const gguf::Value::Array* items = value->as_array(); items != nullptr) {
    if (static_cast<int64_t>(items->size()) != n_layer) {
      throw file.error(key, "has " + std::to_string(items->size()) + " entries, expected one per layer (" +
                                std::to_string(n_layer) + ")");
    }
    for (size_t l = 0; l < out.size(); ++l) {
      if (!(*items)[l].to_i64(out[l]) || out[l] < 0) throw file.error(key, "must hold integers >= 0");
    }
  } else {
    std::fill(out.begin(), out.end(), file.get_i64(key));
    if (out.front() < 0) throw file.error(key, "must be >= 0");
  }
  return out;
}

// The one value of `counts` over the layers where it is not 0 (`fallback`
// where there are none); a second value is an error naming the key.
int64_t common_count(const gguf::GgufFile& file, const std::string& key, const std::vector<int64_t>& counts,
                     int64_t fallback) {
  int64_t common = 0;
  for (const int64_t n : counts) {
    if (n > 0 && common > 0 && n != common) {
      throw file.error(key, "differs between layers (" + std::to_string(common) + " and " + std::to_string(n) +
                                "), which is not supported");
    }
    if (n > 0) common = n;
  }
  return common > 0 ? common : fallback;
}

// head_count_kv, one value or one per layer, 0 marking the recurrent layers
// (s.recurrent_layers, left empty where there are none); the attention
// layers' counts alike (s.n_head_kv).
void read_recurrent_by_kv_heads(const gguf::GgufFile& file, const std::string& p, ModelSpec& s) {
  const std::string kv_key = p + "attention.head_count_kv";
  const std::vector<int64_t> kv = layer_counts(file, kv_key, s.n_layer);
  s.n_head_kv = common_count(file, kv_key, kv, s.n_head);
  if (std::find(kv.begin(), kv.end(), 0) == kv.end()) return;  // no recurrent layer
  s.recurrent_layers.assign(kv.size(), false);
  for (size_t l = 0; l < kv.size(); ++l) s.recurrent_layers[l] = kv[l] == 0;
}

void read_mamba1_widths(const gguf::GgufFile& file, const std::string& p, ModelSpec& s) {
  Mamba1Shape& m = s.mamba1;
  m.conv_kernel = positive_integer(file, p + "ssm.conv_kernel");
  m.d_inner = positive_integer(file, p + "ssm.inner_size");
  m.d_state = positive_integer(file, p + "ssm.state_size");
  m.dt_rank = positive_integer(file, p + "ssm.time_step_rank");
  m.dt_b_c_rms = file.get_bool(p + "ssm.dt_b_c_rms", false);
  if (m.d_inner != 2 * s.n_embd) {
    throw file.error(p + "ssm.inner_size", "is " + std::to_string(m.d_inner) + ", expected 2 x embedding_length " +
                                               std::to_string(2 * s.n_embd) + " (as llama.cpp requires)");
  }
}

void read_mamba2_widths(const gguf::GgufFile& file, const std::string& p, ModelSpec& s) {
  Mamba2Shape& m = s.mamba2;
  m.conv_kernel = positive_integer(file, p + "ssm.conv_kernel");
  m.d_inner = positive_integer(file, p + "ssm.inner_size");
  m.d_state = positive_integer(file, p + "ssm.state_size");
  m.n_head = positive_integer(file, p + "ssm.time_step_rank");
  m.n_group = positive_integer(file, p + "ssm.group_count");
  if (m.d_inner % m.n_head != 0) {
    throw file.error(p + "ssm.time_step_rank", "is " + std::to_string(m.n_head) + ", which does not divide "
                                               "ssm.inner_size " + std::to_string(m.d_inner));
  }
  if (m.n_head % m.n_group != 0) {
    throw file.error(p + "ssm.group_count", "is " + std::to_string(m.n_group) + ", which does not divide "
                                            "ssm.time_step_rank " + std::to_string(m.n_head));
  }
}

}  // namespace

void read_mamba2(const gguf::GgufFile& file, const std::string& p, ModelSpec& s) {
  read_recurrent_by_kv_heads(file, p, s);
  if (s.has_recurrent_layers()) read_mamba2_widths(file, p, s);
}

void read_mamba1(const gguf::GgufFile& file, const std::string& p, ModelSpec& s) {
  read_recurrent_by_kv_heads(file, p, s);
  if (s.has_recurrent_layers()) read_mamba1_widths(file, p, s);
}

void read_parallel_mamba2(const gguf::GgufFile& file, const std::string& p, ModelSpec& s) {
  s.recurrent_layers.assign(static_cast<size_t>(s.n_layer), true);
  s.attends_beside_mamba2 = true;
  read_mamba2_widths(file, p, s);
}

void read_single_block_layers(const gguf::GgufFile& file, const std::string& p, ModelSpec& s) {
  const std::string latent_key = p + "moe_latent_size";
  if (file.get_i64(latent_key, 0) != 0) {
    throw file.error(latent_key, "is set: experts in a latent space (Nemotron 3 Super) are not supported");
  }
  const std::string ff_key = p + "feed_forward_length";
  const std::string kv_key = p + "attention.head_count_kv";
  const std::vector<int64_t> ff = layer_counts(file, ff_key, s.n_layer);
  const std::vector<int64_t> kv = layer_counts(file, kv_key, s.n_layer);
  s.n_ff = common_count(file, ff_key, ff, 1);
  s.n_head_kv = common_count(file, kv_key, kv, s.n_head);
  const auto n = static_cast<size_t>(s.n_layer);
  s.mixerless_layers.assign(n, false);
  s.ffnless_layers.assign(n, false);
  bool any_recurrent = false;
  for (size_t l = 0; l < n; ++l) {
    s.mixerless_layers[l] = ff[l] > 0;
    s.ffnless_layers[l] = ff[l] == 0;
    any_recurrent = any_recurrent || (ff[l] == 0 && kv[l] == 0);
  }
  if (!any_recurrent) return;
  s.recurrent_layers.assign(n, false);
  for (size_t l = 0; l < n; ++l) s.recurrent_layers[l] = ff[l] == 0 && kv[l] == 0;
  if (s.architecture->mamba1_layers) {
    read_mamba1_widths(file, p, s);
  } else {
    read_mamba2_widths(file, p, s);
  }
}

void read_short_conv(const gguf::GgufFile& file, const std::string& p, ModelSpec& s) {
  read_recurrent_by_kv_heads(file, p, s);
  if (!s.has_recurrent_layers()) return;
  const std::string taps_key = p + "shortconv.l_cache";
  s.short_conv_taps = file.get_i64(taps_key);
  if (s.short_conv_taps < 2) throw file.error(taps_key, "must be an integer >= 2, got " + std::to_string(s.short_conv_taps));
}

}  // namespace tc::model
