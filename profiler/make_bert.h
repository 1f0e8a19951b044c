// The BERT part of `thermocline make-model --arch bert|nomic-bert|jina-bert-v2`:
// the keys and tensors of a sentence encoder as llama.cpp's converter writes
// them. bert (MiniLM, bge): learned positions (one row per --n-ctx
// position), two token types, q/k/v, output and an ungated gelu FFN with
// biases, CLS pooling. nomic-bert (nomic-embed-text): RoPE, one attn_qkv, a
// SwiGLU FFN, no biases, mean pooling. jina-bert-v2 (jina-embeddings-v2): no
// positions (ALiBi), q/k/v and output with biases, a GeGLU FFN in one ffn_up
// of 2 n_ff rows with a bias; with --attn-norm-2 the optional parts instead:
// q and k LayerNorms, attn_norm_2, and ffn_gate beside an n_ff-row ffn_up;
// mean pooling; --reranker: jina-reranker-v1's head, cls {n_embd, 1} and its
// bias alone. All: LayerNorms after each block and of the embeddings, no
// output norm, no head.
#pragma once

#include "engine/gguf/gguf_writer.h"
#include "kernels/dtype.h"
#include "profiler/make_gemma4.h"
#include "profiler/make_model.h"

namespace tc::profiler {

// Throws std::invalid_argument where the options cannot make such a file.
void check_bert_options(const MakeModelOptions& o);

// Sets the keys the common ones lack (pooling, non-causal attention, the
// token type count) and adds every tensor but token_embd.
void write_bert_model(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy, gguf::GgufWriter& w,
                      const RandomTensorAdder& add);

}  // namespace tc::profiler
