// The gemma3 vision encoder's forward pass on the CPU backend.
#include "engine/vision/vision_encoder.h"

#include <cmath>
#include <cstdint>

#include "kernels/cpu/cpu_backend.h"

namespace tc::vision {

namespace {

// The patches of normalised pixels as the patch convolution's rows:
// f32 [n_patches, 3 * patch * patch], patch (py, px) row by row, each row in
// (channel, y, x) order. pixels: f32 [size, size, 3].
std::vector<float> image_patches(const std::vector<float>& pixels, int size, int patch) {
  const int side = size / patch;
  const int64_t row = 3LL * patch * patch;
  std::vector<float> out(static_cast<size_t>(side) * side * row);
  for (int py = 0; py < side; ++py) {
    for (int px = 0; px < side; ++px) {
      float* dst = out.data() + (static_cast<int64_t>(py) * side + px) * row;
      for (int c = 0; c < 3; ++c) {
        for (int y = 0; y < patch; ++y) {
          for (int x = 0; x < patch; ++x) {
            const int64_t iy = static_cast<int64_t>(py) * patch + y;
            const int64_t ix = static_cast<int64_t>(px) * patch + x;
            dst[(static_cast<int64_t>(c) * patch + y) * patch + x] =
                pixels[static_cast<size_t>((iy * size + ix) * 3 + c)];
          }
        }
      }
    }
  }
  return out;
}

// gemma3's pool: f32 [side, side, n_embd] (rows of the patch grid) into
// f32 [(side / k)^2, n_embd], each the mean of a k x k block.
std::vector<float> average_pool(const std::vector<float>& x, int side, int n_embd, int k) {
  const int out_side = side / k;
  std::vector<float> out(static_cast<size_t>(out_side) * out_side * n_embd, 0.0f);
  const float inv = 1.0f / static_cast<float>(k * k);
  for (int oy = 0; oy < out_side; ++oy) {
    for (int ox = 0; ox < out_side; ++ox) {
      float* dst = out.data() + (static_cast<int64_t>(oy) * out_side + ox) * n_embd;
      for (int dy = 0; dy < k; ++dy) {
        for (int dx = 0; dx < k; ++dx) {
          const float* src = x.data() + (static_cast<int64_t>(oy * k + dy) * side + (ox * k + dx)) * n_embd;
          for (int e = 0; e < n_embd; ++e) dst[e] += src[e];
        }
      }
      for (int e = 0; e < n_embd; ++e) dst[e] *= inv;
    }
  }
  return out;
}

}  // namespace

VisionEncoder::VisionEncoder(std::shared_ptr<const VisionModel> model, int n_threads)
    : model_(std::move(model)), cpu_(std::make_unique<kernels::CpuBackend>(n_threads)) {}

VisionEncoder::~VisionEncoder() = default;

std::vector<float> VisionEncoder::encode(const RgbImage& image) {
  const VisionSpec& s = model_->spec();
  return encode_pixels(normalize_pixels(fit_square(image, s.image_size), s.image_mean, s.image_std));
}

std::vector<float> VisionEncoder::encode_pixels(const std::vector<float>& pixels) {
  const VisionSpec& s = model_->spec();
  kernels::Backend& b = *cpu_;
  const int64_t n = s.n_patches();
  const int64_t e = s.n_embd;
  const int64_t patch_in = 3LL * s.patch_size * s.patch_size;
  auto buffer = [n](int64_t width) { return std::vector<float>(static_cast<size_t>(n * width)); };

  // Patch embedding, then the learned positions: h f32 [n, e].
  const std::vector<float> patches = image_patches(pixels, s.image_size, s.patch_size);
  const auto patch_w = kernels::Tensor::matrix(model_->patch_w().data(), kernels::DType::F32, patch_in, e);
  std::vector<float> h = buffer(e);
  b.matmul(patch_w, patches.data(), n, h.data());
  b.add_bias(h.data(), model_->patch_b().data(), n, e);
  b.add(h.data(), model_->position().data(), n * e);

  std::vector<float> cur = buffer(e), q = buffer(e), k = buffer(e), v = buffer(e), att = buffer(e);
  std::vector<float> ff = buffer(s.n_ff);
  std::vector<uint16_t> k16(static_cast<size_t>(n * e)), v16(static_cast<size_t>(n * e));
  // Every patch sees every patch: the attention's horizon is the last position.
  const std::vector<int32_t> horizon(static_cast<size_t>(n), static_cast<int32_t>(n - 1));
  kernels::AttentionParams params;
  params.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim()));
  for (const VisionLayer& l : model_->layers()) {
    b.layer_norm(h.data(), l.ln1_w.data(), l.ln1_b.data(), n, e, s.eps, cur.data());
    const kernels::MatmulTarget qkv[] = {{&l.q, q.data()}, {&l.k, k.data()}, {&l.v, v.data()}};
    b.matmul_many(qkv, cur.data(), n);
    b.add_bias(q.data(), l.q_b.data(), n, e);
    b.add_bias(k.data(), l.k_b.data(), n, e);
    b.add_bias(v.data(), l.v_b.data(), n, e);
    b.store_f16(k.data(), n * e, k16.data());
    b.store_f16(v.data(), n * e, v16.data());
    b.attention(q.data(), k16.data(), v16.data(), n, n, s.n_head, s.n_head, s.head_dim(), horizon.data(), att.data(),
                params);
    b.matmul(l.out, att.data(), n, cur.data());
    b.add_bias(cur.data(), l.out_b.data(), n, e);
    b.add(h.data(), cur.data(), n * e);

    b.layer_norm(h.data(), l.ln2_w.data(), l.ln2_b.data(), n, e, s.eps, cur.data());
    b.matmul(l.up, cur.data(), n, ff.data());
    b.add_bias(ff.data(), l.up_b.data(), n, s.n_ff);
    b.ffn_activation(kernels::Activation::Gelu, ff.data(), nullptr, n * s.n_ff, ff.data());
    b.matmul(l.down, ff.data(), n, cur.data());
    b.add_bias(cur.data(), l.down_b.data(), n, e);
    b.add(h.data(), cur.data(), n * e);
  }
  b.layer_norm(h.data(), model_->post_ln_w().data(), model_->post_ln_b().data(), n, e, s.eps, h.data());

  // gemma3's projector: pool, RMSNorm, project.
  std::vector<float> pooled = average_pool(h, s.patches_per_side(), s.n_embd, s.n_merge);
  const int64_t n_out = s.n_image_tokens();
  b.rms_norm(pooled.data(), model_->soft_norm_w().data(), n_out, e, s.eps, pooled.data());
  std::vector<float> out(static_cast<size_t>(n_out * s.n_embd_text));
  b.matmul(model_->projection(), pooled.data(), n_out, out.data());
  return out;
}

}  // namespace tc::vision
