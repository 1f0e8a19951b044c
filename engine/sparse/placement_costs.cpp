// placement_costs: the fixed device bytes and each layer's bytes per neuron,
// from the model's tensor directory.
#include "engine/sparse/placement_costs.h"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>

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

}  // namespace

uint64_t kv_cache_bytes(const model::ModelSpec& spec, const PlacementShape& shape) {
  return checked_product({2, spec.n_layer, shape.n_parallel, shape.n_ctx, spec.n_embd_kv(), 2}, "the KV cache size");
}

uint64_t workspace_bytes(const model::ModelSpec& spec, const PlacementShape& shape, int64_t max_predictor_rank) {
  const int64_t t = shape.n_batch;
  const int64_t r = shape.n_parallel;
  const char* what = "the workspace size";
  uint64_t floats = checked_product({t, 4 * spec.n_embd + 2 * spec.n_embd_kv() + 2 * spec.n_ff}, what);
  uint64_t ints = checked_product({t, 2}, what);
  floats += checked_product({r, spec.n_embd + spec.n_vocab}, what);
  floats += checked_product({r, spec.n_head, shape.n_ctx}, what);
  if (max_predictor_rank > 0) {
    floats += checked_product({r, max_predictor_rank + spec.n_ff}, what);
    ints += checked_product({r, spec.n_ff}, what);
  }
  return (floats + ints) * 4;  // f32 and i32 are both 4 bytes
}

PlacementCosts placement_costs(const gguf::GgufFile& file, const model::ModelSpec& spec,
                               const PredictorSet& predictors, const PlacementShape& shape) {
  if (shape.n_ctx < 1 || shape.n_parallel < 1 || shape.n_batch < 1) {
    throw std::invalid_argument("placement: n_ctx (" + std::to_string(shape.n_ctx) + "), n_parallel (" +
                                std::to_string(shape.n_parallel) + ") and n_batch (" +
                                std::to_string(shape.n_batch) + ") must all be at least 1");
  }
  PlacementCosts costs;
  costs.shape = shape;
  costs.n_ff = spec.n_ff;
  FixedCosts& fixed = costs.fixed;
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    for (const char* t : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm"}) {
      fixed.attention += tensor_bytes(file, model::layer_tensor_name(l, t));
    }
    costs.layers.push_back(layer_neuron_cost(file, spec, l));
  }
  int64_t max_rank = 0;
  for (const auto& p : predictors.layers) {
    fixed.predictors += tensor_bytes(p.fc1) + tensor_bytes(p.fc2);
    max_rank = std::max(max_rank, p.rank());
  }
  fixed.output_head = tensor_bytes(file, spec.tied_embeddings ? "token_embd.weight" : "output.weight") +
                      tensor_bytes(file, "output_norm.weight");
  fixed.kv_cache = kv_cache_bytes(spec, shape);
  fixed.workspace = workspace_bytes(spec, shape, max_rank);
  return costs;
}

}  // namespace tc::sparse
