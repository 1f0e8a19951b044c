// Images for the vision encoder: decoding (PNG through libpng, JPEG through
// libjpeg-turbo, WebP through libwebp, GIF's first frame through giflib)
// to 8-bit RGB, the resize a
// fixed-size projector wants (llama.cpp's mtmd: bilinear, aspect kept,
// centred on black) and the normalisation into the encoder's input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tc::vision {

// A decoding problem: what is wrong with the bytes (not an image, too large).
class ImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Largest image decoded, in pixels and per side; larger ones are an
// ImageError before any pixel is decoded.
inline constexpr int64_t kMaxImagePixels = 64LL * 1024 * 1024;
inline constexpr int kMaxImageSide = 16384;

// 8-bit RGB, rows top to bottom: rgb u8 [height, width, 3].
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;
};

// Decodes an encoded image, told apart by its first bytes (grey becomes
// RGB; alpha is dropped, the colour values kept). ImageError for anything
// else, a broken file or one larger than the limits above.
RgbImage decode_image(std::span<const std::byte> bytes);

// Scales `image` to fit a size x size square keeping its aspect ratio (the
// scaled side rounded up), bilinearly as llama.cpp's img_tool::resize with
// PAD_CEIL, and centres it on black. The same image when it is already that size.
RgbImage fit_square(const RgbImage& image, int size);

// The encoder's input: f32 [height, width, 3], (value / 255 - mean[c]) / std[c].
std::vector<float> normalize_pixels(const RgbImage& image, const float mean[3], const float std[3]);

}  // namespace tc::vision
