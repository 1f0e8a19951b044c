// The Nemotron-H part of `thermocline make-model --arch nemotron_h|nemotron_h_moe|mamba2`: the
// keys and tensors of a Nemotron-H file as llama.cpp's converter writes
// them. Layers of one block each, in the repeating pattern Mamba-2, FFN,
// Mamba-2, attention (Nemotron-H's "M-M*"): Mamba-2's widths as
// make_granite_hybrid.h's, attention with --n-head-kv KV heads and no
// RoPE, a squared-ReLU FFN of --n-ff (ffn_up, ffn_down). nemotron_h_moe:
// the FFN layers --experts ungated experts of --n-ff routed by sigmoid with
// a selection bias, and a shared expert twice as wide. mamba2 (`--arch
// mamba2`): every layer Mamba-2, head counts and feed_forward_length 0;
// mamba: every layer Mamba-1 (d_inner 2 n_embd, dt_rank n_embd / 16).
#pragma once

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_spec.h"
#include "kernels/dtype.h"
#include "profiler/make_gemma4.h"
#include "profiler/make_model.h"

namespace tc::profiler {

// Mamba-1's widths in a made file (shared with make_jamba.h): d_inner 2
// n_embd, --ssm-state (16) states, 4 taps, dt_rank ceil(n_embd / 16).
model::Mamba1Shape mamba1_shape_of(const MakeModelOptions& o);
// The ssm.* keys of those widths.
void write_mamba1_keys(const MakeModelOptions& o, gguf::GgufWriter& w);
// Layer l's Mamba-1 tensors (llama.cpp's names): ssm_in, ssm_conv1d and its
// bias, ssm_x, ssm_dt and its bias, ssm_a, ssm_d, ssm_out.
void add_mamba1_tensors(const MakeModelOptions& o, int64_t l, kernels::DType base, kernels::DType heavy,
                        const RandomTensorAdder& add);

// Sets the per-layer feed_forward_length and attention.head_count_kv
// (0 where a layer lacks that block) and the ssm.* keys, and adds every
// layer tensor.
void write_nemotron_h_model(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy,
                            gguf::GgufWriter& w, const RandomTensorAdder& add);

}  // namespace tc::profiler
