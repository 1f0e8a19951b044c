// The Jamba part of `thermocline make-model --arch jamba`: the keys and
// tensors of an AI21 Jamba file as llama.cpp's converter writes them. The
// third layer of every four attends (--n-head-kv KV heads, no RoPE), the
// others run Mamba-1 (make_nemotron_h.h's widths) with learned norms of dt,
// B and C; every layer has a SwiGLU FFN of --n-ff, on the odd layers with
// --experts a mixture (Jamba's expert layer period 2, offset 1).
#pragma once

#include "engine/gguf/gguf_writer.h"
#include "kernels/dtype.h"
#include "profiler/make_gemma4.h"
#include "profiler/make_model.h"

namespace tc::profiler {

// Sets the jamba keys the common ones lack (the per-layer KV head counts,
// the ssm.* widths) and adds every layer tensor.
void write_jamba_model(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy, gguf::GgufWriter& w,
                       const RandomTensorAdder& add);

}  // namespace tc::profiler
