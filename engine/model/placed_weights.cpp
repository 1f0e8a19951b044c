// place_weights: LlamaWeights views -> views the backend's ops read.
#include "engine/model/placed_weights.h"

#include <stdexcept>
#include <string>

namespace tc::model {
namespace {

class Placer {
 public:
  Placer(kernels::Backend& backend, PlacedWeights& out) : backend_(backend), out_(out) {}

  // A null view (a tensor the file does not have) stays null.
  kernels::Tensor place(const kernels::Tensor& host, const std::string& name) {
    if (host.data == nullptr) return host;
    try {
      kernels::PlacedTensor placed = backend_.upload(host);
      out_.device_bytes += placed.storage.size();
      if (placed.storage.size() > 0) out_.storage.push_back(std::move(placed.storage));
      return placed.tensor;
    } catch (const std::exception& e) {
      throw std::runtime_error("placing weight " + name + " on " + backend_.name() + ": " + e.what());
    }
  }

 private:
  kernels::Backend& backend_;
  PlacedWeights& out_;
};

}  // namespace

PlacedWeights place_weights(const LlamaWeights& host, kernels::Backend& backend, bool ffn_matrices) {
  PlacedWeights out;
  Placer placer(backend, out);
  out.views = host;
  LlamaWeights& v = out.views;
  const bool tied = host.output.data == host.token_embd.data;
  for (const NamedTensor& t : non_layer_tensors(v)) {
    if (t.tensor == &v.output && tied) continue;
    *t.tensor = placer.place(*t.tensor, t.name);
  }
  if (tied) v.output = v.token_embd;
  for (size_t l = 0; l < v.layers.size(); ++l) {
    for (const NamedTensor& t : layer_tensors(v.layers[l], static_cast<int64_t>(l))) {
      // Hybrid mode leaves the FFN matrices out: the split uploads the hot rows.
      *t.tensor = t.ffn_matrix && !ffn_matrices ? kernels::Tensor{} : placer.place(*t.tensor, t.name);
    }
  }
  return out;
}

PlacedWeights place_leading_layers(const LlamaWeights& host, kernels::Backend& backend, int64_t n_device_layers,
                                   bool head) {
  LlamaWeights device_part;
  device_part.layers.assign(host.layers.begin(), host.layers.begin() + n_device_layers);
  if (head) {
    device_part.output_norm = host.output_norm;
    device_part.output_norm_b = host.output_norm_b;
    device_part.output = host.output;  // placed on its own: the tied token_embd stays on the host
    device_part.output_b = host.output_b;
  }
  // The RoPE factors go to the device (its layers read them there); the
  // host layers read the host views (LlamaModel keeps them).
  device_part.rope_freqs = host.rope_freqs;
  device_part.rope_factors_short = host.rope_factors_short;
  device_part.rope_factors_long = host.rope_factors_long;
  PlacedWeights out = place_weights(device_part, backend);
  out.views.token_embd = host.token_embd;
  if (!head) {
    out.views.output_norm = host.output_norm;
    out.views.output_norm_b = host.output_norm_b;
    out.views.output = host.output;
    out.views.output_b = host.output_b;
  }
  out.views.layers.insert(out.views.layers.end(), host.layers.begin() + n_device_layers, host.layers.end());
  return out;
}

}  // namespace tc::model
