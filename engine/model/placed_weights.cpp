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
  LlamaWeights& v = out.views;
  v.token_embd = placer.place(host.token_embd, "token_embd.weight");
  v.output_norm = placer.place(host.output_norm, "output_norm.weight");
  const bool tied = host.output.data == host.token_embd.data;
  v.output = tied ? v.token_embd : placer.place(host.output, "output.weight");
  v.layers.reserve(host.layers.size());
  for (size_t l = 0; l < host.layers.size(); ++l) {
    const LayerWeights& h = host.layers[l];
    auto name = [l](std::string_view t) { return layer_tensor_name(static_cast<int64_t>(l), t); };
    auto ffn = [&](const kernels::Tensor& t, std::string_view n) {
      return ffn_matrices ? placer.place(t, name(n)) : kernels::Tensor{};
    };
    v.layers.push_back({placer.place(h.attn_norm, name("attn_norm")), placer.place(h.attn_q, name("attn_q")),
                        placer.place(h.attn_k, name("attn_k")), placer.place(h.attn_v, name("attn_v")),
                        placer.place(h.attn_output, name("attn_output")), placer.place(h.ffn_norm, name("ffn_norm")),
                        ffn(h.ffn_gate, "ffn_gate"), ffn(h.ffn_up, "ffn_up"), ffn(h.ffn_down, "ffn_down"),
                        ffn(h.ffn_down_t, "ffn_down_t")});
  }
  return out;
}

PlacedWeights place_leading_layers(const LlamaWeights& host, kernels::Backend& backend, int64_t n_device_layers,
                                   bool head) {
  LlamaWeights device_part;
  device_part.layers.assign(host.layers.begin(), host.layers.begin() + n_device_layers);
  if (head) {
    device_part.output_norm = host.output_norm;
    device_part.output = host.output;  // placed on its own: the tied token_embd stays on the host
  }
  PlacedWeights out = place_weights(device_part, backend);
  out.views.token_embd = host.token_embd;
  if (!head) {
    out.views.output_norm = host.output_norm;
    out.views.output = host.output;
  }
  out.views.layers.insert(out.views.layers.end(), host.layers.begin() + n_device_layers, host.layers.end());
  return out;
}

}  // namespace tc::model
