// LlamaWeights: views of a llama model's weight tensors (no copies: in CPU
// mode they point into the file's mmap, until cpu_repack.h replaces the
// Q4_0 matmul matrices with repacked copies). Shapes in GGUF order {cols, rows};
// row r of a matrix is output r. Const after load.
#pragma once

#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "kernels/tensor.h"

namespace tc::model {

struct LayerWeights {
  kernels::Tensor attn_norm;    // f32 [n_embd]
  kernels::Tensor attn_q;       // weight dtype {n_embd, n_embd}
  kernels::Tensor attn_k;       // weight dtype {n_embd, n_embd_kv}
  kernels::Tensor attn_v;       // weight dtype {n_embd, n_embd_kv}
  kernels::Tensor attn_output;  // weight dtype {n_embd, n_embd}
  kernels::Tensor ffn_norm;     // f32 [n_embd]
  kernels::Tensor ffn_gate;     // weight dtype {n_embd, n_ff}, row i = neuron i
  kernels::Tensor ffn_up;       // weight dtype {n_embd, n_ff}, row i = neuron i
  kernels::Tensor ffn_down;     // weight dtype {n_ff, n_embd}, row j = output j; data null in PWRI files
  kernels::Tensor ffn_down_t;   // weight dtype {n_embd, n_ff}, row i = neuron i (PWRI files); data null otherwise
};

struct LlamaWeights {
  kernels::Tensor token_embd;   // weight dtype {n_embd, n_vocab}
  kernels::Tensor output_norm;  // f32 [n_embd]
  kernels::Tensor output;       // weight dtype {n_embd, n_vocab}; token_embd when tied
  std::vector<LayerWeights> layers;
};

// A view of tensor `name` in `file` (which must outlive it). Throws
// ModelLoadError naming the tensor when it is missing.
kernels::Tensor tensor_view(const gguf::GgufFile& file, const std::string& name);

// Views into `file` (which must outlive the result). The spec must come from
// read_model_spec + validate_model_tensors on the same file. PWRI files
// give ffn_down_t, the others ffn_down.
LlamaWeights map_llama_weights(const gguf::GgufFile& file, const ModelSpec& spec);

}  // namespace tc::model
