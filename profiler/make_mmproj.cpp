// make_mmproj: a random gemma3 vision projector (see make_mmproj.h).
#include "profiler/make_mmproj.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/runtime/rng.h"
#include "kernels/cpu/quantize.h"

namespace tc::profiler {

namespace {

using kernels::DType;

// Uniform values in [center - half, center + half], from (seed, stream).
std::vector<float> uniform(uint64_t seed, uint64_t stream, int64_t n, float center, float half) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + stream;
  std::vector<float> out(static_cast<size_t>(n));
  for (float& v : out) {
    const double u = static_cast<double>(runtime::splitmix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
    v = center + half * static_cast<float>(2.0 * u - 1.0);
  }
  return out;
}

// Values in `type`, rows of ne[0].
std::vector<std::byte> encode(const std::vector<float>& values, DType type, int64_t row) {
  const int64_t rows = static_cast<int64_t>(values.size()) / row;
  const auto row_bytes = static_cast<size_t>(kernels::row_bytes(type, row));
  std::vector<std::byte> out(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    kernels::quantize_row(type, values.data() + r * row, out.data() + static_cast<size_t>(r) * row_bytes, row);
  }
  return out;
}

}  // namespace

void make_mmproj(const std::filesystem::path& path, const MakeMmprojOptions& o) {
  if (o.n_embd_text <= 0) throw std::invalid_argument("make-mmproj: --n-embd-text (the model's n_embd) is required");
  if (o.patch_size <= 0 || o.image_size % o.patch_size != 0) {
    throw std::invalid_argument("make-mmproj: the image size must be a multiple of the patch size");
  }
  const int64_t side = o.image_size / o.patch_size;
  if (o.n_merge <= 0 || side % o.n_merge != 0) {
    throw std::invalid_argument("make-mmproj: the pool size must divide the patches per side (" +
                                std::to_string(side) + ")");
  }
  if (o.n_head <= 0 || o.n_embd % o.n_head != 0) {
    throw std::invalid_argument("make-mmproj: the heads must divide the width");
  }
  const int64_t e = o.n_embd;
  gguf::GgufWriter w;
  w.set("general.architecture", gguf::Value(std::string("clip")));
  w.set("general.name", gguf::Value(std::string("synthetic gemma3 projector")));
  w.set("clip.has_vision_encoder", gguf::Value(true));
  w.set("clip.projector_type", gguf::Value(std::string("gemma3")));
  w.set("clip.vision.image_size", gguf::Value(static_cast<uint32_t>(o.image_size)));
  w.set("clip.vision.patch_size", gguf::Value(static_cast<uint32_t>(o.patch_size)));
  w.set("clip.vision.embedding_length", gguf::Value(static_cast<uint32_t>(e)));
  w.set("clip.vision.feed_forward_length", gguf::Value(static_cast<uint32_t>(o.n_ff)));
  w.set("clip.vision.block_count", gguf::Value(static_cast<uint32_t>(o.n_layer)));
  w.set("clip.vision.attention.head_count", gguf::Value(static_cast<uint32_t>(o.n_head)));
  w.set("clip.vision.attention.layer_norm_epsilon", gguf::Value(1e-6f));
  w.set("clip.vision.projection_dim", gguf::Value(static_cast<uint32_t>(o.n_embd_text)));
  w.set("clip.vision.projector.scale_factor", gguf::Value(static_cast<uint32_t>(o.n_merge)));
  w.set("clip.vision.image_mean", gguf::Value::f32_array({0.5f, 0.5f, 0.5f}));
  w.set("clip.vision.image_std", gguf::Value::f32_array({0.5f, 0.5f, 0.5f}));
  uint64_t stream = 0;
  // Weights of fan-in n_in (unit-variance outputs for unit inputs), stored
  // in rows of ne[0].
  auto matrix = [&](const std::string& name, std::vector<int64_t> ne, int64_t n_in, DType type) {
    int64_t count = 1;
    for (const int64_t d : ne) count *= d;
    const auto values = uniform(o.seed, ++stream, count, 0.0f, std::sqrt(3.0f / static_cast<float>(n_in)));
    const int64_t row = ne[0];
    w.add_tensor(name, type, std::move(ne), encode(values, type, row));
  };
  auto vector = [&](const std::string& name, int64_t n, float center, float half) {
    w.add_tensor(name, DType::F32, {n}, encode(uniform(o.seed, ++stream, n, center, half), DType::F32, n));
  };
  const int64_t patch_in = 3 * o.patch_size * o.patch_size;
  matrix("v.patch_embd.weight", {o.patch_size, o.patch_size, 3, e}, patch_in, DType::F16);
  vector("v.patch_embd.bias", e, 0.0f, 0.1f);
  matrix("v.position_embd.weight", {e, side * side}, e, DType::F32);
  for (int64_t l = 0; l < o.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      matrix(b + m + ".weight", {e, e}, e, o.type);
      vector(b + m + ".bias", e, 0.0f, 0.1f);
    }
    matrix(b + "ffn_up.weight", {e, o.n_ff}, e, o.type);
    vector(b + "ffn_up.bias", o.n_ff, 0.0f, 0.1f);
    matrix(b + "ffn_down.weight", {o.n_ff, e}, o.n_ff, o.type);
    vector(b + "ffn_down.bias", e, 0.0f, 0.1f);
    for (const char* norm : {"ln1", "ln2"}) {
      vector(b + norm + ".weight", e, 1.0f, 0.2f);
      vector(b + norm + ".bias", e, 0.0f, 0.1f);
    }
  }
  vector("v.post_ln.weight", e, 1.0f, 0.2f);
  vector("v.post_ln.bias", e, 0.0f, 0.1f);
  vector("mm.soft_emb_norm.weight", e, 1.0f, 0.2f);
  matrix("mm.input_projection.weight", {o.n_embd_text, e}, e, DType::F32);
  w.write(path);
}

}  // namespace tc::profiler
