// KvCache storage and bookkeeping.
#include "engine/runtime/kv_cache.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "kernels/check.h"

namespace tc::runtime {

KvCache::KvCache(kernels::Backend& backend, const model::ModelSpec& spec, int n_slots, int64_t n_ctx,
                 kernels::KvCacheTypes types)
    : KvCache(backend, backend, spec.n_layer, spec, n_slots, n_ctx, types) {}

std::string KvCache::unsupported_reason(const model::ModelSpec& spec, kernels::KvCacheTypes types,
                                        const kernels::Backend* backend) {
  for (const kernels::DType t : {types.k, types.v}) {
    if (!kernels::is_kv_dtype(t)) {
      return "a KV cache holds f16 or q8_0 values, not " + std::string(kernels::dtype_name(t));
    }
  }
  if (backend != nullptr && types != kernels::KvCacheTypes{} && backend->device() != kernels::DeviceKind::Cpu) {
    return "a q8_0 KV cache runs on the CPU only (--device cpu); this model's attention runs on " + backend->name();
  }
  if (spec.n_kv_matrices() == 1 && types.k != types.v) {
    return "this model caches one latent matrix as both keys and values, so the key and value cache types must be "
           "the same (" + std::string(kernels::dtype_name(types.k)) + " and " +
           std::string(kernels::dtype_name(types.v)) + " given)";
  }
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    const int64_t head_dim = spec.shape(l).head_dim;
    if ((types.k == kernels::DType::Q8_0 || types.v == kernels::DType::Q8_0) && head_dim % kernels::kQK8_0 != 0) {
      return "a q8_0 KV cache needs head sizes that are a multiple of 32; this model's are " +
             std::to_string(head_dim);
    }
  }
  return {};
}

uint64_t KvCache::bytes_for(const model::ModelSpec& spec, int64_t n_slots, int64_t n_ctx,
                            kernels::KvCacheTypes types) {
  uint64_t row = 0;  // one position of every layer that caches its own
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    if (spec.shares_kv(l)) continue;
    const int64_t n_embd_kv = spec.n_embd_kv(l);
    row += static_cast<uint64_t>(kernels::row_bytes(types.k, n_embd_kv)) +
           (spec.n_kv_matrices() == 2 ? static_cast<uint64_t>(kernels::row_bytes(types.v, n_embd_kv)) : 0);
  }
  uint64_t recurrent = 0;  // per slot: the delta net layers' states and their checkpoint, f32
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    if (spec.is_recurrent(l)) {
      recurrent += static_cast<uint64_t>(spec.recurrent_conv_values() + spec.recurrent_matrix_values()) * 8;
    }
  }
  return (row * static_cast<uint64_t>(n_ctx) + recurrent) * static_cast<uint64_t>(n_slots);
}

KvCache::KvCache(kernels::Backend& first, kernels::Backend& rest, int64_t n_first_layers,
                 const model::ModelSpec& spec, int n_slots, int64_t n_ctx, kernels::KvCacheTypes types)
    : n_slots_(n_slots), n_layer_(spec.n_layer), n_ctx_(n_ctx), n_matrices_(spec.n_kv_matrices()), types_(types),
      n_first_layers_(n_first_layers), used_(static_cast<size_t>(std::max(n_slots, 0)), 0) {
  if (n_slots < 1) throw std::invalid_argument("KV cache needs at least one slot");
  if (n_ctx < 1) throw std::invalid_argument("KV cache context must be positive");
  if (n_first_layers < 0 || n_first_layers > n_layer_) {
    throw std::invalid_argument("KV cache split at layer " + std::to_string(n_first_layers) + " of " +
                                std::to_string(n_layer_));
  }
  if (const std::string why = unsupported_reason(spec, types, &first); !why.empty()) {
    throw std::invalid_argument("KV cache: " + why);
  }
  // Each side's slot holds its layers' K then V matrices, in layer order;
  // a layer that shares an earlier one's cache takes no room.
  layers_.resize(static_cast<size_t>(n_layer_));
  for (int64_t l = 0; l < n_layer_; ++l) {
    LayerLayout& lay = layers_[static_cast<size_t>(l)];
    lay.kv_layer = spec.shape(l).kv_layer;
    lay.n_embd_kv = spec.n_embd_kv(l);
    lay.k_row_bytes = kernels::row_bytes(types.k, lay.n_embd_kv);
    lay.v_row_bytes = n_matrices_ == 2 ? kernels::row_bytes(types.v, lay.n_embd_kv) : lay.k_row_bytes;
    if (lay.kv_layer != l) continue;
    size_t& slot_bytes = l < n_first_layers_ ? first_slot_bytes_ : rest_slot_bytes_;
    lay.offset = slot_bytes;
    lay.k_bytes = static_cast<size_t>(n_ctx_) * static_cast<size_t>(lay.k_row_bytes);
    slot_bytes += lay.k_bytes + (n_matrices_ == 2 ? static_cast<size_t>(n_ctx_ * lay.v_row_bytes) : 0);
  }
  recurrent_index_.assign(static_cast<size_t>(n_layer_), -1);
  for (int64_t l = 0; l < n_layer_; ++l) {
    if (spec.is_recurrent(l)) recurrent_index_[static_cast<size_t>(l)] = recurrent_layers_++;
  }
  if (recurrent_layers_ > 0) {
    if (n_first_layers_ < n_layer_ || first.device() != kernels::DeviceKind::Cpu) {
      throw std::invalid_argument("KV cache: recurrent layers keep their state in host memory (--device cpu)");
    }
    conv_values_ = spec.recurrent_conv_values();
    delta_values_ = spec.recurrent_matrix_values();
    recurrent_.assign(static_cast<size_t>(n_slots_ * recurrent_layers_ * (conv_values_ + delta_values_)), 0.0f);
  }
  checkpoints_.assign(recurrent_.size(), 0.0f);
  checkpoint_at_.assign(static_cast<size_t>(n_slots_), -1);
  const auto slots = static_cast<size_t>(n_slots_);
  if (first_slot_bytes_ > 0) buffer_ = first.allocate(first_slot_bytes_ * slots);
  if (rest_slot_bytes_ > 0) rest_buffer_ = rest.allocate(rest_slot_bytes_ * slots);
}

std::byte* KvCache::base(int slot, int64_t layer, int which) const {
  TC_CHECK(slot >= 0 && slot < n_slots_ && layer >= 0 && layer < n_layer_, "KV cache slot or layer out of range");
  const int64_t owner = layers_[static_cast<size_t>(layer)].kv_layer;
  const LayerLayout& lay = layers_[static_cast<size_t>(owner)];
  const bool first = owner < n_first_layers_;
  const size_t offset = static_cast<size_t>(slot) * (first ? first_slot_bytes_ : rest_slot_bytes_) + lay.offset +
                        (which == 0 ? 0 : lay.k_bytes);
  return (first ? buffer_ : rest_buffer_).as<std::byte>() + offset;
}

std::string KvCache::describe() const {
  // The names the options take (the cache's types are KV types).
  auto name = [](kernels::DType type) { return std::string(type == kernels::DType::Q8_0 ? "q8_0" : "f16"); };
  const std::string k = name(types_.k), v = name(types_.v);
  const std::string types = n_matrices_ == 1 ? k + " latent rows"
                            : k == v         ? k + " keys and values"
                                             : k + " keys, " + v + " values";
  char mib[32];
  std::snprintf(mib, sizeof(mib), "%.1f MiB", static_cast<double>(bytes()) / (1 << 20));
  return std::to_string(n_slots_) + (n_slots_ == 1 ? " slot x " : " slots x ") + std::to_string(n_ctx_) +
         " positions, " + types + ", " + mib;
}

int64_t KvCache::n_used(int slot) const {
  TC_CHECK(slot >= 0 && slot < n_slots_, "KV cache slot out of range");
  return used_[static_cast<size_t>(slot)];
}

void KvCache::set_used(int slot, int64_t n) {
  TC_CHECK(slot >= 0 && slot < n_slots_ && n >= 0 && n <= n_ctx_, "KV cache slot or length out of range");
  int64_t& used = used_[static_cast<size_t>(slot)];
  TC_CHECK(keeps_prefixes() || n == 0 || n >= used, "a cache with recurrent state cannot be cut back to a prefix");
  if (n == 0 && !recurrent_.empty()) {
    const auto per_slot = static_cast<size_t>(recurrent_layers_ * (conv_values_ + delta_values_));
    std::fill_n(recurrent_.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(slot) * per_slot), per_slot, 0.0f);
  }
  if (n < checkpoint_at_[static_cast<size_t>(slot)]) checkpoint_at_[static_cast<size_t>(slot)] = -1;
  used = n;
}

void KvCache::save_checkpoint(int slot) {
  TC_CHECK(slot >= 0 && slot < n_slots_, "KV cache slot out of range");
  if (recurrent_.empty()) return;
  const auto per_slot = static_cast<std::ptrdiff_t>(recurrent_layers_ * (conv_values_ + delta_values_));
  std::copy_n(recurrent_.begin() + slot * per_slot, per_slot, checkpoints_.begin() + slot * per_slot);
  checkpoint_at_[static_cast<size_t>(slot)] = used_[static_cast<size_t>(slot)];
}

int64_t KvCache::checkpoint_at(int slot) const {
  TC_CHECK(slot >= 0 && slot < n_slots_, "KV cache slot out of range");
  return checkpoint_at_[static_cast<size_t>(slot)];
}

void KvCache::restore_checkpoint(int slot) {
  const int64_t at = checkpoint_at(slot);
  TC_CHECK(at >= 0, "KV cache: the slot has no checkpoint");
  const auto per_slot = static_cast<std::ptrdiff_t>(recurrent_layers_ * (conv_values_ + delta_values_));
  std::copy_n(checkpoints_.begin() + slot * per_slot, per_slot, recurrent_.begin() + slot * per_slot);
  used_[static_cast<size_t>(slot)] = at;
}

float* KvCache::recurrent_state(int slot, int64_t layer, bool delta) const {
  TC_CHECK(slot >= 0 && slot < n_slots_ && layer >= 0 && layer < n_layer_, "KV cache slot or layer out of range");
  const int64_t index = recurrent_index_.empty() ? -1 : recurrent_index_[static_cast<size_t>(layer)];
  TC_CHECK(index >= 0, "KV cache: the layer has no recurrent state");
  const int64_t per_layer = conv_values_ + delta_values_;
  const int64_t offset = (slot * recurrent_layers_ + index) * per_layer + (delta ? conv_values_ : 0);
  return recurrent_.data() + offset;
}

}  // namespace tc::runtime
