// The Granite 4.0-H part of `thermocline make-model --arch granitehybrid`:
// the keys and tensors of a Granite 4.0-H file as llama.cpp's converter
// writes them. Every fourth layer attends (--n-head-kv KV heads, no RoPE:
// rope.scaling.finetuned false), the others run Mamba-2 (head_count_kv 0)
// with d_inner = 2 n_embd in --n-head heads, B and C in two groups (one
// for an odd head count) of 16 states (--ssm-state), and 4 taps. With --experts: Granite's
// mixture (--n-ff wide) and an ungated shared expert as wide.
#pragma once

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_spec.h"
#include "kernels/dtype.h"
#include "profiler/make_gemma4.h"
#include "profiler/make_model.h"

namespace tc::profiler {

// Mamba-2's widths in a made file (shared with make_nemotron_h.h): d_inner
// twice n_embd in --n-head heads, B and C in two groups (one for an odd
// head count) of --ssm-state (16) states, 4 taps.
model::Mamba2Shape mamba2_shape_of(const MakeModelOptions& o);
// The ssm.* keys of those widths.
void write_mamba2_keys(const MakeModelOptions& o, gguf::GgufWriter& w);
// Layer l's Mamba-2 tensors (llama.cpp's names): ssm_in, ssm_conv1d and its
// bias, ssm_dt.bias, ssm_a, ssm_d, ssm_norm (not with --no-ssm-norm), ssm_out.
void add_mamba2_tensors(const MakeModelOptions& o, int64_t l, kernels::DType base, kernels::DType heavy,
                        const RandomTensorAdder& add);

// Throws std::invalid_argument where the options cannot make such a file.
void check_granite_hybrid_options(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy);

// Sets the granitehybrid keys the common ones lack (the per-layer KV head
// counts, the ssm.* widths, no RoPE, the shared expert's width) and adds
// every layer tensor.
void write_granite_hybrid_model(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy,
                                gguf::GgufWriter& w, const RandomTensorAdder& add);

}  // namespace tc::profiler
