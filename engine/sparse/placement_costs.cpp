// placement_costs: the fixed device bytes and each layer's bytes per neuron,
// from the model's tensor directory.
#include "engine/sparse/placement_costs.h"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/model/hybrid_ffn_stream.h"
#include "kernels/device_scratch.h"

namespace tc::sparse {
namespace {

using kernels::DType;

// The product of non-negative factors; throws when it passes 2^63.
uint64_t checked_product(std::initializer_list<int64_t> factors, const char* what) {
  int64_t p = 1;
  for (const int64_t f : factors) {
    if (f < 0 || __builtin_mul_overflow(p, f, &p)) {
      throw std::invalid_argument(std::string(what) + " overflows 63 bits");
    }
  }
  return static_cast<uint64_t>(p);
}

uint64_t tensor_bytes(const gguf::GgufFile& file, const std::string& name) { return file.tensor(name).n_bytes; }

// The FFN matrices and the predictors of a layer, by short name: what the
// hybrid split places per neuron, or not at all.
bool neuron_tensor(std::string_view t) {
  return t == "ffn_gate.weight" || t == "ffn_up.weight" || t == "ffn_down.weight" || t == "ffn_down_t.weight" ||
         t == "fc1.weight" || t == "fc2.weight";
}

// Bytes of the tensors blk.{layer}.* whose short name `keep` accepts (every
// architecture's norms, biases and attention tensors, fused or not).
template <typename Keep>
uint64_t layer_bytes(const gguf::GgufFile& file, int64_t layer, Keep keep) {
  const std::string prefix = "blk." + std::to_string(layer) + ".";
  uint64_t sum = 0;
  for (const auto& t : file.tensors()) {
    if (t.name.rfind(prefix, 0) == 0 && keep(std::string_view(t.name).substr(prefix.size()))) sum += t.n_bytes;
  }
  return sum;
}

uint64_t tensor_bytes(const kernels::Tensor& t) {
  return static_cast<uint64_t>(kernels::row_bytes(t.dtype, t.n_cols())) * static_cast<uint64_t>(t.n_rows());
}

// Row bytes of a neuron-major row of n_embd elements in `dtype`; the tensor
// it comes from is named in the error when n_embd is not whole blocks.
uint64_t neuron_row_bytes(const gguf::GgufFile& file, const std::string& name, DType dtype, int64_t n_embd) {
  const int64_t block = kernels::dtype_traits(dtype).block_size;
  if (n_embd % block != 0) {
    throw gguf::ModelLoadError::for_tensor(
        file.path(), name,
        "is " + std::string(kernels::dtype_name(dtype)) + ", whose neuron-major rows need n_embd (" +
            std::to_string(n_embd) + ") to be a multiple of its block size " + std::to_string(block) +
            "; this model cannot run the sparse FFN, so it has nothing to place");
  }
  return static_cast<uint64_t>(kernels::row_bytes(dtype, n_embd));
}

NeuronCost layer_neuron_cost(const gguf::GgufFile& file, const model::ModelSpec& spec, int64_t layer) {
  NeuronCost c;
  const std::string gate = model::layer_tensor_name(layer, "ffn_gate");
  if (const auto* info = file.find_tensor(gate)) {
    c.gate_dtype = info->dtype;
    c.gate_bytes = neuron_row_bytes(file, gate, info->dtype, spec.n_embd);
  }
  const std::string up = model::layer_tensor_name(layer, "ffn_up");
  c.up_dtype = file.tensor(up).dtype;
  c.up_bytes = neuron_row_bytes(file, up, c.up_dtype, spec.n_embd);
  // PWRI files store ffn_down_t; GGUF files' ffn_down is transposed at load
  // in its own dtype (engine/model/transposed_down.h).
  const std::string down = model::layer_tensor_name(layer, spec.sparse_layout ? "ffn_down_t" : "ffn_down");
  c.down_t_dtype = file.tensor(down).dtype;
  c.down_t_bytes = neuron_row_bytes(file, down, c.down_t_dtype, spec.n_embd);
  return c;
}

void check_shape(const PlacementShape& shape) {
  if (shape.n_ctx < 1 || shape.n_parallel < 1 || shape.n_batch < 1 || shape.n_logit_rows < 0) {
    throw std::invalid_argument("placement: n_ctx (" + std::to_string(shape.n_ctx) + "), n_parallel (" +
                                std::to_string(shape.n_parallel) + ") and n_batch (" +
                                std::to_string(shape.n_batch) + ") must all be at least 1, n_logit_rows (" +
                                std::to_string(shape.n_logit_rows) + ") at least 0");
  }
}

// The buffers every step has, whatever its FFN; the head's; and cuBLAS's workspace.
void common_buffers(const model::ModelSpec& spec, const PlacementShape& shape, StepWorkspace& ws) {
  const char* what = "the workspace size";
  ws.blas = kernels::kCublasWorkspaceBytes;
  const int64_t t = shape.step_tokens();
  // x, cur (the wider of n_embd and n_embd_q), q, k, v, tmp, and the
  // parallel layer form's FFN output (LlamaModel::Workspace); then i32 ids,
  // positions and attention horizons per token.
  const int64_t cur = std::max(spec.n_embd, spec.n_embd_q());
  const int64_t ffn_out = spec.architecture->layer_form == model::LayerForm::Parallel ? spec.n_embd : 0;
  ws.buffers = checked_product({t, 2 * spec.n_embd + cur + spec.n_embd_q() + ffn_out + 2 * spec.n_embd_kv()}, what) * 4 +
               checked_product({t, 3}, what) * 4;
  ws.head_buffers = checked_product({shape.logit_rows(), spec.n_embd + spec.n_vocab}, what) * 4;
}

// The GPU scratch of a matmul of T tokens over a matrix of ne = {n_in, n_out}.
uint64_t gemm_scratch_of(kernels::DType dtype, int64_t n_in, int64_t n_out, int64_t n_tokens) {
  return kernels::gemm_scratch(dtype, n_in, n_out, n_tokens).total();
}

uint64_t file_matrix_scratch(const gguf::GgufFile& file, const std::string& name, int64_t n_tokens) {
  const gguf::TensorInfo& info = file.tensor(name);
  return gemm_scratch_of(info.dtype, info.ne[0], info.n_rows(), n_tokens);
}

// The largest scratch of the attention matmuls of every layer over T tokens.
uint64_t attention_scratch(const gguf::GgufFile& file, const model::ModelSpec& spec, int64_t n_tokens) {
  uint64_t most = 0;
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    // attn_qkv where the file fuses them (its views are multiplied one by one, each no larger).
    for (const char* t : {"attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output"}) {
      const std::string name = model::layer_tensor_name(l, t);
      if (file.find_tensor(name) != nullptr) most = std::max(most, file_matrix_scratch(file, name, n_tokens));
    }
  }
  return most;
}

uint64_t head_scratch(const gguf::GgufFile& file, const model::ModelSpec& spec, const PlacementShape& shape) {
  return file_matrix_scratch(file, spec.tied_embeddings ? "token_embd.weight" : "output.weight", shape.logit_rows());
}

// axpy_rows of the down projection over up to n_ff neuron rows of T tokens.
uint64_t down_axpy_scratch(const model::ModelSpec& spec, int64_t n_tokens) {
  return kernels::axpy_scratch_bytes(spec.n_ff, n_tokens, spec.n_embd);
}

}  // namespace

uint64_t kv_cache_bytes(const model::ModelSpec& spec, const PlacementShape& shape) {
  return checked_product({spec.n_kv_matrices(), spec.n_layer, shape.n_parallel, shape.n_ctx, spec.n_embd_kv(), 2},
                         "the KV cache size");
}

StepWorkspace dense_step_workspace(const gguf::GgufFile& file, const model::ModelSpec& spec,
                                   const PlacementShape& shape) {
  check_shape(shape);
  StepWorkspace ws;
  common_buffers(spec, shape, ws);
  const int64_t t = shape.step_tokens();
  ws.buffers += checked_product({t, 2 * spec.n_ff}, "the workspace size") * 4;
  ws.scratch = attention_scratch(file, spec, t);
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    for (const char* name : {"ffn_gate", "ffn_up", "ffn_down"}) {
      const std::string full = model::layer_tensor_name(l, name);
      if (file.find_tensor(full) != nullptr) ws.scratch = std::max(ws.scratch, file_matrix_scratch(file, full, t));
    }
    // PWRI files keep only ffn_down_t: the dense down projection is an axpy over every neuron.
    if (file.find_tensor(model::layer_tensor_name(l, "ffn_down_t")) != nullptr) {
      ws.scratch = std::max(ws.scratch, down_axpy_scratch(spec, t));
    }
  }
  ws.head_scratch = head_scratch(file, spec, shape);
  return ws;
}

StepWorkspace hybrid_step_workspace(const gguf::GgufFile& file, const model::ModelSpec& spec,
                                    const PredictorSet& predictors, const PlacementShape& shape) {
  check_shape(shape);
  const char* what = "the workspace size";
  StepWorkspace ws;
  common_buffers(spec, shape, ws);
  const int64_t t = shape.step_tokens();
  int64_t max_rank = 0;
  for (const auto& p : predictors.layers) max_rank = std::max(max_rank, p.rank());
  const int64_t n_words = (spec.n_ff + 31) / 32;
  ws.buffers += checked_product({t, max_rank + 4 * spec.n_ff + spec.n_embd}, what) * 4 +
                checked_product({2, t, n_words}, what) * 4 + checked_product({spec.n_ff}, what) * 4;
  // The streamed dense steps' two stages and their row list (HybridFfnStream),
  // where a step can be long enough to stream.
  if (t >= model::kStreamMinTokens) {
    int64_t max_row_bytes = 0;
    for (int64_t l = 0; l < spec.n_layer; ++l) {
      const NeuronCost c = layer_neuron_cost(file, spec, l);
      max_row_bytes = std::max({max_row_bytes, static_cast<int64_t>(c.gate_bytes), static_cast<int64_t>(c.up_bytes),
                                static_cast<int64_t>(c.down_t_bytes)});
    }
    ws.buffers += model::stream_stage_bytes(max_row_bytes, spec.n_ff) +
                  static_cast<uint64_t>(model::stream_tile_rows(max_row_bytes, spec.n_ff)) * 4;
  }
  ws.scratch = std::max(attention_scratch(file, spec, t), down_axpy_scratch(spec, t));
  // Dense steps run the hot gate and up rows as matmuls (up to n_ff rows).
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    for (const char* name : {"ffn_gate", "ffn_up"}) {
      const std::string full = model::layer_tensor_name(l, name);
      if (file.find_tensor(full) != nullptr) ws.scratch = std::max(ws.scratch, file_matrix_scratch(file, full, t));
    }
  }
  for (const auto& p : predictors.layers) {
    for (const kernels::Tensor* m : {&p.fc1, &p.fc2}) {
      ws.scratch = std::max(ws.scratch, gemm_scratch_of(m->dtype, m->ne[0], m->n_rows(), t));
    }
  }
  ws.head_scratch = head_scratch(file, spec, shape);
  return ws;
}

PlacementCosts placement_costs(const gguf::GgufFile& file, const model::ModelSpec& spec,
                               const PredictorSet& predictors, const PlacementShape& shape) {
  check_shape(shape);
  PlacementCosts costs;
  costs.shape = shape;
  costs.n_ff = spec.n_ff;
  FixedCosts& fixed = costs.fixed;
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    fixed.attention += layer_bytes(file, l, [](std::string_view t) { return !neuron_tensor(t); });
    costs.layers.push_back(layer_neuron_cost(file, spec, l));
  }
  for (const auto& p : predictors.layers) fixed.predictors += tensor_bytes(p.fc1) + tensor_bytes(p.fc2);
  fixed.output_head = tensor_bytes(file, spec.tied_embeddings ? "token_embd.weight" : "output.weight") +
                      tensor_bytes(file, "output_norm.weight");
  for (const char* t : {"output_norm.bias", "output.bias", "rope_freqs.weight", "rope_factors_short.weight",
                        "rope_factors_long.weight"}) {
    if (file.find_tensor(t) != nullptr) fixed.output_head += tensor_bytes(file, t);
  }
  fixed.kv_cache = kv_cache_bytes(spec, shape);
  fixed.workspace = hybrid_step_workspace(file, spec, predictors, shape).total();
  return costs;
}

}  // namespace tc::sparse
