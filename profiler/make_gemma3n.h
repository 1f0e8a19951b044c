// The Gemma 3n part of `thermocline make-model --arch gemma3n`: the keys
// and tensors of a Gemma 3n file as llama.cpp's converter writes them
// (Architecture::altup_layers): four AltUp streams, LAuReL of rank 64,
// per-layer inputs of 256 values, a window on four layers of five, and
// past layer 20 the caches of layers 18 and 19 shared (llama.cpp's fixed
// constants, which the file's keys repeat).
#pragma once

#include "engine/gguf/gguf_writer.h"
#include "kernels/dtype.h"
#include "profiler/make_gemma4.h"
#include "profiler/make_model.h"

namespace tc::profiler {

// Sets the gemma3n keys beyond the common ones and adds every tensor past
// token_embd and output_norm. `base` is the matrices' type, `heavy`
// attn_v's and ffn_down's (as llama.cpp's mixes).
void write_gemma3n_model(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy, gguf::GgufWriter& w,
                         const RandomTensorAdder& add);

}  // namespace tc::profiler
