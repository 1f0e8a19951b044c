// LlamaModel::shift_context and its refusal (context_shift.h): a slot's
// cache rows moved down and its keys rotated back, layer by layer.
// Key rows pass through host memory as f32 [rows, n_embd_kv] (dequantized
// from the cache's f16 or q8_0, rotated, stored back in that type); value
// rows, and the keys of layers without RoPE, move as bytes on the layer's
// backend.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/context_shift.h"
#include "engine/model/llama_model.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"

namespace tc::model {
namespace {

// Rows per piece of a layer: bounds the host scratch (f32 [kPieceRows, n_embd_kv]).
constexpr int64_t kPieceRows = 64;

// The rotation RoPE applies for a position step of `delta`: pair i's cos and
// sin, from the rope op itself (one head of unit pairs rotated by `delta`,
// so the angles are exactly the forward pass's), scaled to unit length
// (RoPE's cos/sin magnitude, YaRN's and LongRoPE's, applies once, when a key
// is stored).
struct PairRotation {
  std::vector<double> cos, sin;
  kernels::RopeMode mode = kernels::RopeMode::Normal;
  int64_t n_pairs = 0;
};

PairRotation rotation_for(const kernels::RopeParams& params, int64_t head_dim, int32_t delta) {
  PairRotation r;
  r.mode = params.mode;
  r.n_pairs = params.n_rot / 2;
  const bool neox = params.mode == kernels::RopeMode::Neox;
  std::vector<float> probe(static_cast<size_t>(head_dim), 0.0f);
  for (int64_t i = 0; i < r.n_pairs; ++i) probe[static_cast<size_t>(neox ? i : 2 * i)] = 1.0f;
  kernels::rope(probe.data(), 1, 1, head_dim, &delta, params);
  for (int64_t i = 0; i < r.n_pairs; ++i) {
    const double c = probe[static_cast<size_t>(neox ? i : 2 * i)];
    const double s = probe[static_cast<size_t>(neox ? i + r.n_pairs : 2 * i + 1)];
    const double length = std::hypot(c, s);
    r.cos.push_back(length > 0 ? c / length : 1.0);
    r.sin.push_back(length > 0 ? s / length : 0.0);
  }
  return r;
}

// Rotates every head of n_rows rows of f32 [n_rows, n_heads * head_dim] in place.
void rotate_rows(const PairRotation& r, float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim) {
  const int64_t first_step = r.mode == kernels::RopeMode::Neox ? 1 : 2;
  const int64_t second_offset = r.mode == kernels::RopeMode::Neox ? r.n_pairs : 1;
  for (int64_t h = 0; h < n_rows * n_heads; ++h) {
    float* xh = x + h * head_dim;
    for (int64_t i = 0; i < r.n_pairs; ++i) {
      float* p0 = xh + i * first_step;
      float* p1 = p0 + second_offset;
      const double x0 = *p0, x1 = *p1, c = r.cos[static_cast<size_t>(i)], s = r.sin[static_cast<size_t>(i)];
      *p0 = static_cast<float>(x0 * c - x1 * s);
      *p1 = static_cast<float>(x0 * s + x1 * c);
    }
  }
}

// Moves rows [from, from + n) of a matrix of `row_bytes` rows down to row
// `to` (< from) on its backend, in pieces that never overlap.
void move_rows(kernels::Backend& b, std::byte* matrix, int64_t row_bytes, int64_t from, int64_t to, int64_t n) {
  const int64_t step = from - to;
  for (int64_t done = 0; done < n; done += step) {
    const int64_t rows = std::min(step, n - done);
    b.copy_on_device(matrix + (to + done) * row_bytes, matrix + (from + done) * row_bytes,
                     static_cast<size_t>(rows * row_bytes));
  }
}

}  // namespace

std::string context_shift_refusal(const ModelSpec& spec) {
  if (spec.has_recurrent_layers()) {
    return spec.arch + "'s recurrent layers sum every position into their state, which cannot drop positions";
  }
  if (spec.architecture != nullptr && spec.architecture->qk_norm_after_rope) {
    return std::string(spec.architecture->name) +
           " norms its keys after RoPE, so a cached key cannot be rotated to a new position";
  }
  return {};
}

void LlamaModel::shift_context(runtime::KvCache& kv, int slot, int64_t n_keep, int64_t n_discard) {
  if (const std::string refusal = context_shift_refusal(spec_); !refusal.empty()) {
    throw std::invalid_argument("context shift: " + refusal);
  }
  const int64_t n_used = kv.n_used(slot);
  if (n_keep < 0 || n_discard < 1 || n_keep + n_discard > n_used) {
    throw std::invalid_argument("context shift: keeping " + std::to_string(n_keep) + " and dropping " +
                                std::to_string(n_discard) + " of " + std::to_string(n_used) + " positions");
  }
  const int64_t n_moved = n_used - n_keep - n_discard;
  const kernels::KvCacheTypes types = kv.types();
  auto backend_of = [&](int64_t layer) -> kernels::Backend& {
    return layer < kv.n_first_layers() || offload_cpu_ == nullptr ? backend_ : *offload_cpu_;
  };
  backend_.synchronize();
  if (offload_cpu_ != nullptr) offload_cpu_->synchronize();

  auto shift_layer = [&](int64_t layer) {
    if (spec_.shares_kv(layer)) return;  // its cache is an earlier layer's, shifted there
    kernels::Backend& b = backend_of(layer);
    const int64_t n_embd_kv = kv.n_embd_kv(layer);
    const int64_t head_dim = spec_.shape(layer).head_dim;
    const int64_t n_heads = n_embd_kv / head_dim;  // latent attention: one row of head_dim
    const int64_t k_row_bytes = kv.k_row_bytes(layer);
    auto* k = static_cast<std::byte*>(kv.k(slot, layer));
    auto* v = static_cast<std::byte*>(kv.v(slot, layer));
    if (v != k) move_rows(b, v, kv.v_row_bytes(layer), n_keep + n_discard, n_keep, n_moved);
    if (!rotates(layer) || spec_.shape(layer).n_rot == 0) {
      move_rows(b, k, k_row_bytes, n_keep + n_discard, n_keep, n_moved);
      return;
    }
    const PairRotation rotation =
        rotation_for(rope_params(host_rope_factors_, layer), head_dim, static_cast<int32_t>(-n_discard));
    std::vector<std::byte> bytes(static_cast<size_t>(kPieceRows * k_row_bytes));
    std::vector<float> rows(static_cast<size_t>(kPieceRows * n_embd_kv));
    // Ascending pieces: a piece is read before it is written, and is written
    // below every row still to be read.
    for (int64_t done = 0; done < n_moved; done += kPieceRows) {
      const int64_t n = std::min(kPieceRows, n_moved - done);
      b.copy_to_host(bytes.data(), k + (n_keep + n_discard + done) * k_row_bytes, static_cast<size_t>(n * k_row_bytes));
      b.synchronize();  // the copies may run behind the call (Backend's contract)
      for (int64_t r = 0; r < n; ++r) {
        kernels::dequantize_row(types.k, bytes.data() + r * k_row_bytes, rows.data() + r * n_embd_kv, n_embd_kv);
      }
      rotate_rows(rotation, rows.data(), n, n_heads, head_dim);
      kernels::store_kv(rows.data(), n, n_embd_kv, types.k, bytes.data());
      b.copy_to_device(k + (n_keep + done) * k_row_bytes, bytes.data(), static_cast<size_t>(n * k_row_bytes));
      b.synchronize();  // before `bytes` takes the next piece
    }
  };
  // On the CPU alone the layers go side by side; a device's copies stay on one thread.
  const bool all_on_host = backend_.device() == kernels::DeviceKind::Cpu && offload_cpu_ == nullptr;
  if (all_on_host) {
    backend_.host_parallel(spec_.n_layer, shift_layer);
  } else {
    for (int64_t layer = 0; layer < spec_.n_layer; ++layer) shift_layer(layer);
  }
  backend_.synchronize();
  if (offload_cpu_ != nullptr) offload_cpu_->synchronize();
  kv.set_used(slot, n_used - n_discard);
}

}  // namespace tc::model
