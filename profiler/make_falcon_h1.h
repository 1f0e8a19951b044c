// The Falcon-H1 part of `thermocline make-model --arch falcon-h1`: the keys
// and tensors of a Falcon-H1 file as llama.cpp's converter writes them.
// Every layer runs Mamba-2 (make_granite_hybrid.h's widths) beside
// attention (--n-head-kv KV heads, NeoX RoPE) on one attn_norm, then a
// SwiGLU FFN of --n-ff under blk.N.ffn_norm.
#pragma once

#include "engine/gguf/gguf_writer.h"
#include "kernels/dtype.h"
#include "profiler/make_gemma4.h"
#include "profiler/make_model.h"

namespace tc::profiler {

// Sets the ssm.* keys and adds every layer tensor.
void write_falcon_h1_model(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy, gguf::GgufWriter& w,
                           const RandomTensorAdder& add);

}  // namespace tc::profiler
