// The LFM2 part of `thermocline make-model --arch lfm2|lfm2moe`: the keys
// and tensors of an LFM2 file as llama.cpp's converter writes them. Every
// third layer attends (--n-head heads over n_embd, --n-head-kv KV heads,
// q/k norms), the others run the gated short convolution (head_count_kv 0,
// 3 taps); the output norm is token_embd_norm. lfm2moe: the first two
// layers' FFNs dense (--n-ff), the others --experts of --n-ff / 2 routed by
// sigmoid with a selection bias.
#pragma once

#include "engine/gguf/gguf_writer.h"
#include "kernels/dtype.h"
#include "profiler/make_gemma4.h"
#include "profiler/make_model.h"

namespace tc::profiler {

// Throws std::invalid_argument where the options cannot make such a file.
void check_lfm2_options(const MakeModelOptions& o);

// Sets the lfm2 keys the common ones lack (the per-layer KV head counts,
// the convolution's taps, lfm2moe's routing) and adds the output norm and
// every layer tensor.
void write_lfm2_model(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy, gguf::GgufWriter& w,
                      const RandomTensorAdder& add);

}  // namespace tc::profiler
