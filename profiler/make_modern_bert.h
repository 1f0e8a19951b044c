// The ModernBERT part of `thermocline make-model --arch modern-bert`: the
// keys and tensors of a ModernBERT encoder (gte-modernbert, nomic
// modernbert-embed, granite-embedding R2) as llama.cpp's ModernBertModel
// converter writes them: token_embd_norm, pre-LayerNorms without biases
// (none before layer 0's attention), one attn_qkv, a GLU FFN in one ffn_up
// of 2 n_ff rows (hidden_activation: gelu, or --hidden-act), an output
// norm, a window of 128 (or --sliding-window) on two layers of three
// (--swa-pattern), rope.freq_base_swa 10000, CLS pooling.
#pragma once

#include "engine/gguf/gguf_writer.h"
#include "kernels/dtype.h"
#include "profiler/make_gemma4.h"
#include "profiler/make_model.h"

namespace tc::profiler {

// Throws std::invalid_argument where the options cannot make such a file.
void check_modern_bert_options(const MakeModelOptions& o);

// Sets the keys the common ones lack (pooling, non-causal attention, the
// window and its RoPE base, hidden_activation and the matching
// thermocline.ffn_form) and adds every tensor but token_embd and
// output_norm.
void write_modern_bert_model(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy,
                             gguf::GgufWriter& w, const RandomTensorAdder& add);

}  // namespace tc::profiler
