// Layers that differ, read from GGUF metadata as llama.cpp's loaders read
// them: Gemma 4's (Architecture::gemma4_layers) widths that are one value or
// one per layer, the windowed layers' head size and the layers that attend
// over an earlier layer's cache; Qwen 3.5's (Architecture::qwen35_layers)
// gated delta net layers and Granite 4.0-H's Mamba-2 layers, and their widths.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"

namespace tc::gguf {
class GgufFile;
}

namespace tc::model {

// A positive integer key that is one value or an array of one per layer
// (llama.cpp's get_key_or_arr), as n_layer values; `fallback` for every
// layer where the key is absent. Throws ModelLoadError naming the key.
std::vector<int64_t> per_layer_positive_key(const gguf::GgufFile& file, const std::string& key, int64_t n_layer,
                                            int64_t fallback);

// Fills s.layer_shapes and s.n_embd_per_layer once the rest of the spec
// (the window's layers, the global head size and rotation) is read; sets
// n_head_kv and n_rot to the global layers' and n_ff to the widest layer's
// (with experts, to an expert's width, {arch}.expert_feed_forward_length).
// Throws ModelLoadError naming the key at fault.
void read_layer_shapes(const gguf::GgufFile& file, const std::string& prefix, ModelSpec& s);

// Gemma 3n's s.altup (after read_layer_shapes): {arch}.altup.num_inputs
// (default 4) and altup.active_idx (0: the only one llama.cpp's graph
// runs), llama.cpp's LAuReL rank and sparse layers; needs per-layer inputs.
// Throws ModelLoadError naming the key at fault.
void read_altup(const gguf::GgufFile& file, const std::string& prefix, ModelSpec& s);

// Fills s.recurrent_layers and s.delta_net (qwen35's load_arch_hparams:
// the ssm.* keys, attention.recurrent_layers or full_attention_interval).
// Throws ModelLoadError naming the key at fault.
void read_delta_net(const gguf::GgufFile& file, const std::string& prefix, ModelSpec& s);

// Jamba (jamba's load_arch_hparams): the layers whose
// attention.head_count_kv entry is 0 run Mamba-1 (s.recurrent_layers,
// s.mamba1: ssm.* keys). Throws ModelLoadError naming the key at fault.
void read_mamba1(const gguf::GgufFile& file, const std::string& prefix, ModelSpec& s);

// Granite 4.0-H (granitehybrid's load_arch_hparams): attention.head_count_kv,
// one value or one per layer, 0 marking the Mamba-2 layers (the others'
// counts alike: s.n_head_kv); where there are any, s.recurrent_layers and
// s.mamba2 from the ssm.* keys. Throws ModelLoadError naming the key at fault.
void read_mamba2(const gguf::GgufFile& file, const std::string& prefix, ModelSpec& s);

// LFM2 (lfm2's load_arch_hparams): attention.head_count_kv as read_mamba2
// reads it, 0 marking the short convolution's layers, and its taps
// (shortconv.l_cache). Throws ModelLoadError naming the key at fault.
void read_short_conv(const gguf::GgufFile& file, const std::string& prefix, ModelSpec& s);

// Falcon-H1 (falcon-h1's load_arch_hparams): every layer runs Mamba-2 (the
// ssm.* widths) beside its attention. Throws ModelLoadError naming the key.
void read_parallel_mamba2(const gguf::GgufFile& file, const std::string& prefix, ModelSpec& s);

// Nemotron-H (nemotron_h's load_arch_hparams): feed_forward_length and
// attention.head_count_kv, one value or one per layer; a layer with both 0
// runs Mamba-2 (s.recurrent_layers, s.mamba2), one with only
// feed_forward_length 0 attention, the others only the FFN
// (s.mixerless_layers, s.ffnless_layers); the FFN layers' widths alike
// (s.n_ff), as the attention layers' KV heads (s.n_head_kv).
void read_single_block_layers(const gguf::GgufFile& file, const std::string& prefix, ModelSpec& s);

}  // namespace tc::model
