// Image decoding (stb_image from Debian's libstb), resizing and normalising.
#include "engine/vision/image_pixels.h"

#include <stb_image.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace tc::vision {

RgbImage decode_image(std::span<const std::byte> bytes) {
  if (bytes.empty()) throw ImageError("the image is empty");
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) throw ImageError("the image is too large");
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int len = static_cast<int>(bytes.size());
  int w = 0;
  int h = 0;
  int channels = 0;
  if (stbi_info_from_memory(data, len, &w, &h, &channels) == 0) {
    throw ImageError(std::string("the image could not be decoded (") + stbi_failure_reason() +
                     "); JPEG, PNG, GIF, BMP, TGA, PSD, PNM and HDR are read");
  }
  if (w <= 0 || h <= 0 || w > kMaxImageSide || h > kMaxImageSide ||
      static_cast<int64_t>(w) * h > kMaxImagePixels) {
    throw ImageError("the image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels; at most " +
                     std::to_string(kMaxImageSide) + " per side and " + std::to_string(kMaxImagePixels) +
                     " in all are read");
  }
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(stbi_load_from_memory(data, len, &w, &h, &channels, 3),
                                                    stbi_image_free);
  if (!pixels) throw ImageError(std::string("the image could not be decoded (") + stbi_failure_reason() + ")");
  RgbImage out;
  out.width = w;
  out.height = h;
  out.rgb.assign(pixels.get(), pixels.get() + static_cast<size_t>(w) * h * 3);
  return out;
}

namespace {

// llama.cpp's resize_bilinear: corners aligned, the result truncated to u8.
RgbImage resize_bilinear(const RgbImage& src, int width, int height) {
  RgbImage dst;
  dst.width = std::max(width, 1);
  dst.height = std::max(height, 1);
  dst.rgb.resize(static_cast<size_t>(dst.width) * dst.height * 3);
  const float x_ratio = dst.width > 1 ? static_cast<float>(src.width - 1) / static_cast<float>(dst.width - 1) : 0.0f;
  const float y_ratio =
      dst.height > 1 ? static_cast<float>(src.height - 1) / static_cast<float>(dst.height - 1) : 0.0f;
  auto pixel = [&](int x, int y, int c) {
    return static_cast<float>(src.rgb[(static_cast<size_t>(y) * src.width + x) * 3 + c]);
  };
  auto lerp = [](float a, float b, float t) { return a + (b - a) * t; };
  for (int y = 0; y < dst.height; ++y) {
    for (int x = 0; x < dst.width; ++x) {
      const float px = static_cast<float>(x) * x_ratio;
      const float py = static_cast<float>(y) * y_ratio;
      const int x0 = std::min(static_cast<int>(px), src.width - 1);
      const int y0 = std::min(static_cast<int>(py), src.height - 1);
      const int x1 = std::min(x0 + 1, src.width - 1);
      const int y1 = std::min(y0 + 1, src.height - 1);
      const float xf = px - static_cast<float>(x0);
      const float yf = py - static_cast<float>(y0);
      for (int c = 0; c < 3; ++c) {
        const float top = lerp(pixel(x0, y0, c), pixel(x1, y0, c), xf);
        const float bottom = lerp(pixel(x0, y1, c), pixel(x1, y1, c), xf);
        dst.rgb[(static_cast<size_t>(y) * dst.width + x) * 3 + c] = static_cast<uint8_t>(lerp(top, bottom, yf));
      }
    }
  }
  return dst;
}

}  // namespace

RgbImage fit_square(const RgbImage& image, int size) {
  if (image.width == size && image.height == size) return image;
  const float scale = std::min(static_cast<float>(size) / static_cast<float>(image.width),
                               static_cast<float>(size) / static_cast<float>(image.height));
  const int w = std::min(static_cast<int>(std::ceil(static_cast<float>(image.width) * scale)), size);
  const int h = std::min(static_cast<int>(std::ceil(static_cast<float>(image.height) * scale)), size);
  const RgbImage scaled = resize_bilinear(image, w, h);
  RgbImage out;
  out.width = size;
  out.height = size;
  out.rgb.assign(static_cast<size_t>(size) * size * 3, 0);
  const int off_x = (size - scaled.width) / 2;
  const int off_y = (size - scaled.height) / 2;
  for (int y = 0; y < scaled.height; ++y) {
    std::copy_n(scaled.rgb.begin() + static_cast<std::ptrdiff_t>(y) * scaled.width * 3, scaled.width * 3,
                out.rgb.begin() + (static_cast<std::ptrdiff_t>(y + off_y) * size + off_x) * 3);
  }
  return out;
}

std::vector<float> normalize_pixels(const RgbImage& image, const float mean[3], const float std[3]) {
  std::vector<float> out(image.rgb.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t c = i % 3;
    out[i] = (static_cast<float>(image.rgb[i]) / 255.0f - mean[c]) / std[c];
  }
  return out;
}

}  // namespace tc::vision
