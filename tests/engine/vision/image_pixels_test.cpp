// Image decoding, fitting and normalising: PNG, JPEG, WebP and GIF bytes written
// here with the same libraries (tests/image_encode.h), decoded back; broken
// and unknown files refused; the resize against hand-computed pixels.
#include <catch2/catch.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/vision/image_pixels.h"
#include "tests/image_encode.h"

namespace tc::vision {
namespace {

RgbImage gradient(int w, int h) {
  RgbImage image{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = image.rgb.data() + (static_cast<size_t>(y) * w + x) * 3;
      p[0] = static_cast<uint8_t>(x * 255 / std::max(w - 1, 1));
      p[1] = static_cast<uint8_t>(y * 255 / std::max(h - 1, 1));
      p[2] = static_cast<uint8_t>((x + y) % 256);
    }
  }
  return image;
}

std::span<const std::byte> as_bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

}  // namespace

TEST_CASE("PNG decodes to the exact pixels, RGBA and grey to RGB", "[vision]") {
  const RgbImage image = gradient(13, 7);
  const RgbImage back = decode_image(as_bytes(test::encode_png(image.rgb.data(), 13, 7, 3)));
  CHECK(back.width == 13);
  CHECK(back.height == 7);
  CHECK(back.rgb == image.rgb);

  std::vector<uint8_t> rgba(13 * 7 * 4), grey(13 * 7);
  for (size_t i = 0; i < grey.size(); ++i) {
    for (size_t c = 0; c < 3; ++c) rgba[i * 4 + c] = image.rgb[i * 3 + c];
    rgba[i * 4 + 3] = 17;
    grey[i] = static_cast<uint8_t>(i);
  }
  // Alpha dropped, the colour values kept as stored.
  CHECK(decode_image(as_bytes(test::encode_png(rgba.data(), 13, 7, 4))).rgb == image.rgb);
  const RgbImage g = decode_image(as_bytes(test::encode_png(grey.data(), 13, 7, 1)));
  REQUIRE(g.rgb.size() == 13 * 7 * 3);
  CHECK((g.rgb[5 * 3] == 5 && g.rgb[5 * 3 + 1] == 5 && g.rgb[5 * 3 + 2] == 5));
}

TEST_CASE("JPEG decodes to close pixels, lossless WebP to the exact ones", "[vision]") {
  const RgbImage image = gradient(32, 16);
  const RgbImage back = decode_image(as_bytes(test::encode_jpeg(image.rgb.data(), 32, 16, 95)));
  REQUIRE((back.width == 32 && back.height == 16));
  double err = 0;
  for (size_t i = 0; i < back.rgb.size(); ++i) err += std::abs(int(back.rgb[i]) - int(image.rgb[i]));
  CHECK(err / static_cast<double>(back.rgb.size()) < 6.0);
  CHECK(decode_image(as_bytes(test::encode_webp_lossless(image.rgb.data(), 32, 16))).rgb == image.rgb);
}

TEST_CASE("a GIF's first frame decodes to its palette's colours, interlaced or not", "[vision]") {
  const int w = 11, h = 13;  // 13 rows: every interlace pass has rows
  std::vector<GifColorType> palette(256);
  for (int i = 0; i < 256; ++i) {
    palette[static_cast<size_t>(i)] = {static_cast<GifByteType>(i), static_cast<GifByteType>(255 - i),
                                       static_cast<GifByteType>(i * 7)};
  }
  std::vector<uint8_t> indices(static_cast<size_t>(w) * h);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<uint8_t>(i * 5 + i / w);
  std::vector<uint8_t> want(indices.size() * 3);
  for (size_t i = 0; i < indices.size(); ++i) {
    const GifColorType& c = palette[indices[i]];
    want[i * 3] = c.Red;
    want[i * 3 + 1] = c.Green;
    want[i * 3 + 2] = c.Blue;
  }
  for (const bool interlace : {false, true}) {
    INFO("interlaced " << interlace);
    const RgbImage image = decode_image(as_bytes(test::encode_gif(indices.data(), w, h, palette, interlace)));
    REQUIRE((image.width == w && image.height == h));
    CHECK(image.rgb == want);
  }
  const std::string gif = test::encode_gif(indices.data(), w, h, palette, false);
  CHECK_THROWS_AS(decode_image(as_bytes(gif.substr(0, gif.size() / 2))), ImageError);
  CHECK_THROWS_AS(decode_image(as_bytes(gif.substr(0, 10))), ImageError);
}

TEST_CASE("bytes that are no image, a broken one or too large a one are an ImageError", "[vision]") {
  CHECK_THROWS_AS(decode_image({}), ImageError);
  const std::string junk = "this is not an image at all, only text";
  CHECK_THROWS_WITH(decode_image(as_bytes(junk)), Catch::Contains("not PNG, JPEG, WebP or GIF"));
  // A GIF whose canvas reads as 24864 x 25710 (" a" and "nd"): refused before anything is allocated.
  CHECK_THROWS_WITH(decode_image(as_bytes(std::string("GIF89a and the rest"))), Catch::Contains("24864x25710"));
  const RgbImage tiny = gradient(8, 8);
  // Cut short: the header reads, the data does not.
  std::string png = test::encode_png(tiny.rgb.data(), 8, 8, 3);
  CHECK_THROWS_AS(decode_image(as_bytes(png.substr(0, png.size() / 2))), ImageError);
  CHECK_THROWS_AS(decode_image(as_bytes(png.substr(0, 20))), ImageError);
  // A PNG header claiming 20000 x 10 pixels (its CRC made right): refused before decoding.
  auto put32 = [&](size_t at, uint32_t v) {
    for (int b = 0; b < 4; ++b) png[at + static_cast<size_t>(b)] = static_cast<char>((v >> (24 - 8 * b)) & 0xFF);
  };
  put32(16, 20000);  // IHDR's width and height, big-endian, after "IHDR" at byte 12
  put32(20, 10);
  uint32_t crc = 0xFFFFFFFFu;  // CRC-32 of the chunk's type and data (bytes 12..28)
  for (size_t i = 12; i < 29; ++i) {
    crc ^= static_cast<uint8_t>(png[i]);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  put32(29, ~crc);
  CHECK_THROWS_WITH(decode_image(as_bytes(png)), Catch::Contains("20000x10"));
  const std::string jpeg = test::encode_jpeg(tiny.rgb.data(), 8, 8, 90);
  CHECK_THROWS_AS(decode_image(as_bytes(jpeg.substr(0, 12))), ImageError);
}

TEST_CASE("fit_square keeps the aspect ratio, centred on black, bilinear with aligned corners", "[vision]") {
  // A 4 x 2 image into 8 x 8: scaled 2x to 8 x 4, rows 2..5 of the square.
  RgbImage image{4, 2, std::vector<uint8_t>(4 * 2 * 3)};
  for (int x = 0; x < 4; ++x) {
    for (int c = 0; c < 3; ++c) {
      image.rgb[static_cast<size_t>(x * 3 + c)] = static_cast<uint8_t>(30 * x);          // top row: 0 30 60 90
      image.rgb[static_cast<size_t>((4 + x) * 3 + c)] = static_cast<uint8_t>(30 * x + 100);  // bottom row
    }
  }
  const RgbImage out = fit_square(image, 8);
  REQUIRE((out.width == 8 && out.height == 8));
  auto at = [&](int x, int y) { return int(out.rgb[(static_cast<size_t>(y) * 8 + x) * 3]); };
  CHECK(at(0, 0) == 0);   // padding
  CHECK(at(7, 1) == 0);
  CHECK(at(3, 6) == 0);
  CHECK(at(0, 2) == 0);   // the top-left corner of the image
  CHECK(at(7, 2) == 90);  // top-right: corners aligned
  CHECK(at(0, 5) == 100);
  CHECK(at(7, 5) == 190);
  // x = 1 samples source x = 1 * 3/7, y = 3 samples source y = 1/3: truncated.
  CHECK(at(1, 3) == static_cast<int>((30.0f * 3 / 7) + (100.0f / 3)));
  // Already the size: unchanged.
  const RgbImage square = gradient(8, 8);
  CHECK(fit_square(square, 8).rgb == square.rgb);
}

TEST_CASE("normalize_pixels scales to [0, 1] then by mean and std per channel", "[vision]") {
  const RgbImage image{1, 1, {0, 255, 51}};
  const float mean[3] = {0.5f, 0.5f, 0.1f};
  const float std_dev[3] = {0.5f, 0.25f, 2.0f};
  const auto x = normalize_pixels(image, mean, std_dev);
  REQUIRE(x.size() == 3);
  CHECK(x[0] == Approx(-1.0));
  CHECK(x[1] == Approx(2.0));
  CHECK(x[2] == Approx((0.2 - 0.1) / 2.0));
}

}  // namespace tc::vision
