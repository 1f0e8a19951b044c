// KvCache storage and bookkeeping.
#include "engine/runtime/kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/check.h"

namespace tc::runtime {

KvCache::KvCache(kernels::Backend& backend, const model::ModelSpec& spec, int n_slots, int64_t n_ctx)
    : KvCache(backend, backend, spec.n_layer, spec, n_slots, n_ctx) {}

KvCache::KvCache(kernels::Backend& first, kernels::Backend& rest, int64_t n_first_layers,
                 const model::ModelSpec& spec, int n_slots, int64_t n_ctx)
    : n_slots_(n_slots), n_layer_(spec.n_layer), n_ctx_(n_ctx), n_embd_kv_(spec.n_embd_kv()),
      n_matrices_(spec.n_kv_matrices()), n_first_layers_(n_first_layers), used_(static_cast<size_t>(std::max(n_slots, 0)), 0) {
  if (n_slots < 1) throw std::invalid_argument("KV cache needs at least one slot");
  if (n_ctx < 1) throw std::invalid_argument("KV cache context must be positive");
  if (n_first_layers < 0 || n_first_layers > n_layer_) {
    throw std::invalid_argument("KV cache split at layer " + std::to_string(n_first_layers) + " of " +
                                std::to_string(n_layer_));
  }
  const size_t per_layer =
      static_cast<size_t>(n_slots * n_matrices_) * static_cast<size_t>(n_ctx) * static_cast<size_t>(n_embd_kv_);
  if (n_first_layers_ > 0) {
    buffer_ = first.allocate(per_layer * static_cast<size_t>(n_first_layers_) * sizeof(uint16_t));
  }
  if (n_first_layers_ < n_layer_) {
    rest_buffer_ = rest.allocate(per_layer * static_cast<size_t>(n_layer_ - n_first_layers_) * sizeof(uint16_t));
  }
}

uint16_t* KvCache::base(int slot, int64_t layer, int which) const {
  TC_CHECK(slot >= 0 && slot < n_slots_ && layer >= 0 && layer < n_layer_, "KV cache slot or layer out of range");
  const bool first = layer < n_first_layers_;
  const auto n_side = static_cast<size_t>(first ? n_first_layers_ : n_layer_ - n_first_layers_);
  const auto side_layer = static_cast<size_t>(first ? layer : layer - n_first_layers_);
  const size_t per_matrix = static_cast<size_t>(n_ctx_) * static_cast<size_t>(n_embd_kv_);
  const size_t index = (static_cast<size_t>(slot) * n_side + side_layer) * static_cast<size_t>(n_matrices_) +
                       static_cast<size_t>(which);
  return (first ? buffer_ : rest_buffer_).as<uint16_t>() + index * per_matrix;
}

int64_t KvCache::n_used(int slot) const {
  TC_CHECK(slot >= 0 && slot < n_slots_, "KV cache slot out of range");
  return used_[static_cast<size_t>(slot)];
}

void KvCache::set_used(int slot, int64_t n) {
  TC_CHECK(slot >= 0 && slot < n_slots_ && n >= 0 && n <= n_ctx_, "KV cache slot or length out of range");
  used_[static_cast<size_t>(slot)] = n;
}

}  // namespace tc::runtime
