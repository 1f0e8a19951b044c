// The Qwen 3.5 part of `thermocline make-model --arch qwen35|qwen35moe|qwen3next`: the
// keys and tensors of a Qwen 3.5 file as llama.cpp's converter writes them.
// Every fourth layer is gated attention (attn_q twice as wide: each head's
// queries, then its output gate), the others a gated delta net whose
// query/key heads are --n-head-kv, value heads --n-head / 2 (at least
// those), head_dim wide, with a 4-tap convolution. qwen35moe: --experts of
// --n-ff each in every layer (gate and up in ffn_gate_up_exps) and a gated
// shared expert twice as wide. qwen3next: qwen35moe's layers with Qwen3-Next's
// delta net (value heads sharing key heads in runs, one ssm_ba), its q, k,
// v and z in one ssm_in grouped by key head with --fused-qkv (older
// converters' form), else in attn_qkv and attn_gate.
#pragma once

#include "kernels/dtype.h"
#include "engine/gguf/gguf_writer.h"
#include "profiler/make_gemma4.h"
#include "profiler/make_model.h"

namespace tc::profiler {

// Throws std::invalid_argument where the options cannot make such a file.
void check_qwen35_options(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy);

// Sets the qwen35 keys the common ones lack (the delta net's widths, the
// attention interval, M-RoPE sections) and adds every layer tensor.
void write_qwen35_model(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy, gguf::GgufWriter& w,
                        const RandomTensorAdder& add);

}  // namespace tc::profiler
