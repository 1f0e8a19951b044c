// The Gemma 4 part of `thermocline make-model --arch gemma4`: the keys and
// tensors of a dense Gemma 4 file as llama.cpp's converter writes them,
// with layers of two shapes (windowed layers with head_dim heads and
// --n-head-kv of them; global layers with heads twice as wide, half as many
// KV heads, values from attn_k and proportional RoPE factors), the last
// --shared-kv-layers layers attending over earlier layers' caches with a
// double-wide FFN, per-layer inputs of --n-embd-per-layer values, and with
// --experts a mixture beside each dense FFN (experts --n-ff / 2 wide).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "kernels/dtype.h"
#include "profiler/make_model.h"

namespace tc::profiler {

// Adds a seeded random tensor: name, dtype, ne (GGUF order), mean, sd.
using RandomTensorAdder =
    std::function<void(const std::string& name, kernels::DType dtype, std::vector<int64_t> ne, float mean, float sd)>;

// Throws std::invalid_argument where the options cannot make such a file
// (a shared layer whose source would be of the other kind, widths that are
// not whole blocks of the weight types).
void check_gemma4_options(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy);

// Sets the gemma4 keys that differ from the common ones (per-layer arrays,
// the windowed layers' head size, the window pattern, sharing and
// per-layer inputs) and adds every tensor. `base` is the matrices' type,
// `heavy` attn_v's and ffn_down's (as llama.cpp's mixes).
void write_gemma4_model(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy, gguf::GgufWriter& w,
                        const RandomTensorAdder& add);

}  // namespace tc::profiler
