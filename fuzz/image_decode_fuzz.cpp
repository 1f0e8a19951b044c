// libFuzzer target for image decoding (engine/vision/image_pixels.h), what
// any HTTP client's image reaches first: the format sniffing and the
// decoders (libpng, libjpeg-turbo, libwebp, giflib, whose records are
// read here one by one), then the fit into a square
// and the normalisation. Any input must decode into a consistent RgbImage
// or throw ImageError; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "engine/vision/image_pixels.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "image_decode_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tc::vision::RgbImage image;
  try {
    image = tc::vision::decode_image(std::as_bytes(std::span(data, size)));
  } catch (const tc::vision::ImageError&) {
    return 0;
  }
  require(image.width > 0 && image.height > 0, "a decoded image has pixels");
  require(image.rgb.size() == static_cast<size_t>(image.width) * image.height * 3, "three bytes per pixel");
  // Small images only: the fit's cost grows with the target, not the input.
  const tc::vision::RgbImage square = tc::vision::fit_square(image, 24);
  require(square.width == 24 && square.height == 24 && square.rgb.size() == 24 * 24 * 3, "the square's size");
  const float mean[3] = {0.5f, 0.5f, 0.5f};
  const float std_dev[3] = {0.5f, 0.5f, 0.5f};
  const auto pixels = tc::vision::normalize_pixels(square, mean, std_dev);
  for (const float p : pixels) require(p >= -1.0f && p <= 1.0f, "normalised pixels in [-1, 1]");
  return 0;
}
