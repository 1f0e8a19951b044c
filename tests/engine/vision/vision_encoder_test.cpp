// The gemma3 vision encoder against a float64 reference computed here
// straight from the projector file's tensors (the patch convolution from
// its 4-D kernel, attention with a softmax per row, gelu's tanh form), on
// fresh random pixels and random weights from make_mmproj.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/vision/vision_encoder.h"
#include "kernels/cpu/quantize.h"
#include "profiler/make_mmproj.h"
#include "tests/test_util.h"
#include "tests/tiny_projector.h"

namespace tc::vision {
namespace {

using Vec = std::vector<double>;

// Every element of a tensor as f64.
Vec tensor64(const gguf::GgufFile& f, const std::string& name) {
  const auto& info = f.tensor(name);
  const int64_t cols = info.ne[0];
  const auto data = f.tensor_data(info);
  const auto row_bytes = static_cast<size_t>(kernels::row_bytes(info.dtype, cols));
  std::vector<float> row(static_cast<size_t>(cols));
  Vec out;
  for (int64_t r = 0; r < info.n_rows(); ++r) {
    kernels::dequantize_row(info.dtype, data.data() + static_cast<size_t>(r) * row_bytes, row.data(), cols);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

// y[t, o] = sum_i x[t, i] w[o, i] + b[o]; w rows of n_in.
Vec linear(const Vec& x, const Vec& w, const Vec& b, int64_t n, int64_t n_in, int64_t n_out) {
  Vec y(static_cast<size_t>(n * n_out));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t o = 0; o < n_out; ++o) {
      double s = b.empty() ? 0.0 : b[static_cast<size_t>(o)];
      for (int64_t i = 0; i < n_in; ++i)
        s += x[static_cast<size_t>(t * n_in + i)] * w[static_cast<size_t>(o * n_in + i)];
      y[static_cast<size_t>(t * n_out + o)] = s;
    }
  }
  return y;
}

Vec layer_norm(const Vec& x, const Vec& w, const Vec& b, int64_t n, int64_t e, double eps) {
  Vec y(x.size());
  for (int64_t t = 0; t < n; ++t) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < e; ++i) mean += x[static_cast<size_t>(t * e + i)];
    mean /= static_cast<double>(e);
    for (int64_t i = 0; i < e; ++i) var += std::pow(x[static_cast<size_t>(t * e + i)] - mean, 2);
    var /= static_cast<double>(e);
    for (int64_t i = 0; i < e; ++i) {
      const auto k = static_cast<size_t>(t * e + i);
      y[k] = (x[k] - mean) / std::sqrt(var + eps) * w[static_cast<size_t>(i)] + b[static_cast<size_t>(i)];
    }
  }
  return y;
}

Vec reference(const gguf::GgufFile& f, const std::vector<float>& pixels, const VisionSpec& s) {
  const int64_t p = s.patch_size, side = s.patches_per_side(), n = s.n_patches(), e = s.n_embd;
  const int64_t hd = s.head_dim(), ff = s.n_ff;
  const double eps = s.eps;
  // The convolution: kernel ne {kx, ky, channel, out}.
  const Vec conv = tensor64(f, "v.patch_embd.weight"), conv_b = tensor64(f, "v.patch_embd.bias");
  const Vec pos = tensor64(f, "v.position_embd.weight");
  Vec h(static_cast<size_t>(n * e));
  for (int64_t py = 0; py < side; ++py) {
    for (int64_t px = 0; px < side; ++px) {
      for (int64_t o = 0; o < e; ++o) {
        double acc = conv_b[static_cast<size_t>(o)];
        for (int64_t c = 0; c < 3; ++c) {
          for (int64_t ky = 0; ky < p; ++ky) {
            for (int64_t kx = 0; kx < p; ++kx) {
              const int64_t iy = py * p + ky, ix = px * p + kx;
              acc += conv[static_cast<size_t>(((o * 3 + c) * p + ky) * p + kx)] *
                     pixels[static_cast<size_t>((iy * s.image_size + ix) * 3 + c)];
            }
          }
        }
        const int64_t t = py * side + px;
        h[static_cast<size_t>(t * e + o)] = acc + pos[static_cast<size_t>(t * e + o)];
      }
    }
  }
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    auto t = [&](const std::string& name) { return tensor64(f, b + name); };
    const Vec x = layer_norm(h, t("ln1.weight"), t("ln1.bias"), n, e, eps);
    const Vec q = linear(x, t("attn_q.weight"), t("attn_q.bias"), n, e, e);
    const Vec k = linear(x, t("attn_k.weight"), t("attn_k.bias"), n, e, e);
    const Vec v = linear(x, t("attn_v.weight"), t("attn_v.bias"), n, e, e);
    Vec att(static_cast<size_t>(n * e));
    for (int64_t head = 0; head < s.n_head; ++head) {
      for (int64_t i = 0; i < n; ++i) {
        Vec score(static_cast<size_t>(n));
        double mx = -1e300;
        for (int64_t j = 0; j < n; ++j) {
          double d = 0;
          for (int64_t c = 0; c < hd; ++c) {
            d += q[static_cast<size_t>(i * e + head * hd + c)] * k[static_cast<size_t>(j * e + head * hd + c)];
          }
          score[static_cast<size_t>(j)] = d / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, score[static_cast<size_t>(j)]);
        }
        double sum = 0;
        for (double& sc : score) sum += (sc = std::exp(sc - mx));
        for (int64_t c = 0; c < hd; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < n; ++j)
            acc += score[static_cast<size_t>(j)] * v[static_cast<size_t>(j * e + head * hd + c)];
          att[static_cast<size_t>(i * e + head * hd + c)] = acc / sum;
        }
      }
    }
    const Vec o = linear(att, t("attn_out.weight"), t("attn_out.bias"), n, e, e);
    for (size_t i = 0; i < h.size(); ++i) h[i] += o[i];
    Vec up = linear(layer_norm(h, t("ln2.weight"), t("ln2.bias"), n, e, eps), t("ffn_up.weight"), t("ffn_up.bias"), n,
                    e, ff);
    for (double& u : up) u = 0.5 * u * (1 + std::tanh(std::sqrt(2 / M_PI) * (u + 0.044715 * u * u * u)));
    const Vec down = linear(up, t("ffn_down.weight"), t("ffn_down.bias"), n, ff, e);
    for (size_t i = 0; i < h.size(); ++i) h[i] += down[i];
  }
  h = layer_norm(h, tensor64(f, "v.post_ln.weight"), tensor64(f, "v.post_ln.bias"), n, e, eps);
  // Pool, RMSNorm, project (the file's projection is [n_embd rows of n_embd_text]).
  const int64_t k = s.n_merge, out_side = side / k, n_out = out_side * out_side, nt = s.n_embd_text;
  const Vec norm_w = tensor64(f, "mm.soft_emb_norm.weight"), proj = tensor64(f, "mm.input_projection.weight");
  Vec out(static_cast<size_t>(n_out * nt));
  for (int64_t oy = 0; oy < out_side; ++oy) {
    for (int64_t ox = 0; ox < out_side; ++ox) {
      Vec pooled(static_cast<size_t>(e));
      for (int64_t dy = 0; dy < k; ++dy) {
        for (int64_t dx = 0; dx < k; ++dx) {
          for (int64_t i = 0; i < e; ++i) {
            pooled[static_cast<size_t>(i)] +=
                h[static_cast<size_t>(((oy * k + dy) * side + ox * k + dx) * e + i)] / double(k * k);
          }
        }
      }
      double ms = 0;
      for (double v : pooled) ms += v * v;
      const double scale = 1 / std::sqrt(ms / static_cast<double>(e) + eps);
      const int64_t token = oy * out_side + ox;
      for (int64_t j = 0; j < nt; ++j) {
        double acc = 0;
        for (int64_t i = 0; i < e; ++i) {
          acc += pooled[static_cast<size_t>(i)] * scale * norm_w[static_cast<size_t>(i)] *
                 proj[static_cast<size_t>(i * nt + j)];
        }
        out[static_cast<size_t>(token * nt + j)] = acc;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the gemma3 vision encoder matches a float64 reference on random pixels", "[vision]") {
  const auto type = GENERATE(kernels::DType::F32, kernels::DType::F16);
  profiler::MakeMmprojOptions o;
  o.n_embd_text = 40;
  o.image_size = 24;
  o.patch_size = 4;  // 6 x 6 patches, pooled 3 x 3 into 4 tokens
  o.n_merge = 3;
  o.n_embd = 32;
  o.n_ff = 48;
  o.n_layer = 2;
  o.n_head = 4;
  o.type = type;
  o.seed = 11 + static_cast<uint64_t>(type);
  const auto path = test::scratch_dir("vision_encoder") / "mmproj.gguf";
  profiler::make_mmproj(path, o);
  const auto model = VisionModel::load(path);
  const VisionSpec& s = model->spec();
  REQUIRE(s.n_image_tokens() == 4);
  REQUIRE(s.n_embd_text == 40);
  const std::vector<float> pixels = test::random_floats(static_cast<size_t>(24 * 24 * 3), 7 + o.seed);
  VisionEncoder encoder(model, 2);
  const std::vector<float> ours = encoder.encode_pixels(pixels);
  const Vec want = reference(gguf::GgufFile::open(path), pixels, s);
  REQUIRE(ours.size() == want.size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(ours[i] - want[i]));
    norm += want[i] * want[i];
  }
  const double rms = std::sqrt(norm / static_cast<double>(want.size()));
  INFO("max abs error " << err << ", output rms " << rms);
  REQUIRE(rms > 0.1);
  // K and V pass through f16 (the attention's cache type); the rest is f32.
  CHECK(err < 2e-3 * rms);
}

TEST_CASE("a projector file names what is wrong with it", "[vision]") {
  profiler::MakeMmprojOptions o = test::tiny_projector(16);
  const auto dir = test::scratch_dir("vision_model_errors");
  SECTION("a language model is not a projector") {
    const auto path = dir / "not.gguf";
    profiler::make_mmproj(path, o);
    std::string bytes = test::read_file(path);
    const auto at = bytes.find("clip.has_vision_encoder");
    REQUIRE(at != std::string::npos);
    bytes[at + 5] = 'X';  // the key renamed: no vision encoder declared
    test::write_file(path, bytes);
    REQUIRE_THROWS_WITH(VisionModel::load(path),
                        Catch::Contains("not a vision projector") && Catch::Contains("clip.has_vision_encoder"));
  }
  SECTION("make_mmproj refuses a pool that does not divide the patch grid") {
    o.n_merge = 3;
    REQUIRE_THROWS_WITH(profiler::make_mmproj(dir / "bad.gguf", o), Catch::Contains("pool size"));
  }
}

}  // namespace tc::vision
