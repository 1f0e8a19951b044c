// split_hybrid_weights: gather the hot rows into packed host matrices, upload
// them, keep views of the host tensors for the cold rows.
#include "engine/model/hybrid_weights.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace tc::model {
namespace {

// Rows `ids` of `host` packed into one matrix {n_cols, ids.size() + n_zero}
// on `device`, the last n_zero rows zero.
kernels::Tensor upload_rows(const kernels::Tensor& host, const std::vector<int32_t>& ids, int64_t n_zero,
                            kernels::Backend& device, HybridWeights& out, const std::string& name) {
  const auto n = static_cast<int64_t>(ids.size());
  const int64_t row_bytes = kernels::row_bytes(host.dtype, host.ne[0]);
  kernels::Buffer gathered = kernels::Buffer::host(static_cast<size_t>(row_bytes * (n + n_zero)));
  for (int64_t p = 0; p < n; ++p) {
    std::memcpy(gathered.as<std::byte>() + p * row_bytes, host.row(ids[static_cast<size_t>(p)]),
                static_cast<size_t>(row_bytes));
  }
  const kernels::Tensor view = kernels::Tensor::matrix(gathered.data(), host.dtype, host.ne[0], n + n_zero);
  try {
    kernels::PlacedTensor placed = device.upload(view);
    out.device_bytes += placed.storage.size();
    if (placed.storage.size() > 0) {
      out.storage.push_back(std::move(placed.storage));
    } else {
      out.storage.push_back(std::move(gathered));  // a zero-copy backend reads the gathered rows themselves
    }
    return placed.tensor;
  } catch (const std::exception& e) {
    throw std::runtime_error("placing the hot rows of " + name + " on " + device.name() + ": " + e.what());
  }
}

}  // namespace

void check_neuron_placement(const NeuronPlacement& placement, int64_t n_layer, int64_t n_ff) {
  if (static_cast<int64_t>(placement.hot.size()) != n_layer) {
    throw std::invalid_argument("the neuron placement has " + std::to_string(placement.hot.size()) +
                                " layers; the model has " + std::to_string(n_layer));
  }
  for (int64_t l = 0; l < n_layer; ++l) {
    int64_t previous = -1;
    for (const int32_t i : placement.hot[static_cast<size_t>(l)]) {
      if (i <= previous || i >= n_ff) {
        throw std::invalid_argument("the neuron placement of layer " + std::to_string(l) +
                                    " is not strictly ascending within [0, " + std::to_string(n_ff) +
                                    "): neuron " + std::to_string(i));
      }
      previous = i;
    }
  }
}

HybridWeights split_hybrid_weights(const std::vector<LayerWeights>& host_layers, const NeuronPlacement& placement,
                                   kernels::Backend& device, std::span<const int64_t> cache_slots) {
  if (!cache_slots.empty() && cache_slots.size() != host_layers.size()) {
    throw std::invalid_argument("the neuron cache needs a slot count per layer");
  }
  HybridWeights out;
  out.layers.resize(host_layers.size());
  for (size_t l = 0; l < host_layers.size(); ++l) {
    const LayerWeights& h = host_layers[l];
    HybridLayerWeights& w = out.layers[l];
    const std::vector<int32_t>& hot = placement.hot[l];
    if (h.ffn_gate.data == nullptr || h.ffn_up.data == nullptr || h.ffn_down_t.data == nullptr) {
      throw std::invalid_argument("hybrid mode needs ffn_gate, ffn_up and ffn_down_t of layer " + std::to_string(l));
    }
    w.host_gate = h.ffn_gate;
    w.host_up = h.ffn_up;
    w.host_down_t = h.ffn_down_t;
    w.n_hot = static_cast<int64_t>(hot.size());
    w.n_slots = cache_slots.empty() ? 0 : cache_slots[l];
    w.hot_position.assign(static_cast<size_t>(h.ffn_gate.ne[1]), -1);
    for (size_t p = 0; p < hot.size(); ++p) w.hot_position[static_cast<size_t>(hot[p])] = static_cast<int32_t>(p);
    if (w.n_slots < 0 || w.n_hot + w.n_slots > h.ffn_gate.ne[1]) {
      throw std::invalid_argument("layer " + std::to_string(l) + ": " + std::to_string(w.n_slots) +
                                  " cache slots for " + std::to_string(h.ffn_gate.ne[1] - w.n_hot) + " cold neurons");
    }
    if (hot.empty() && w.n_slots == 0) continue;
    const auto name = [l](std::string_view t) { return layer_tensor_name(static_cast<int64_t>(l), t); };
    w.hot_gate = upload_rows(h.ffn_gate, hot, w.n_slots, device, out, name("ffn_gate"));
    w.hot_up = upload_rows(h.ffn_up, hot, w.n_slots, device, out, name("ffn_up"));
    w.hot_down_t = upload_rows(h.ffn_down_t, hot, w.n_slots, device, out, name("ffn_down_t"));
  }
  return out;
}

}  // namespace tc::model
