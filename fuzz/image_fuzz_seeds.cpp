// Writes small valid images (PNG grey, RGB and RGBA, JPEG, WebP, GIF plain
// and interlaced) into a directory, the image fuzzer's starting corpus.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/image_encode.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: image_fuzz_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int w = 7, h = 5;
  std::vector<uint8_t> pixels(static_cast<size_t>(w) * h * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 29 % 256);
  std::vector<GifColorType> palette(256);
  for (int i = 0; i < 256; ++i) palette[static_cast<size_t>(i)] = {static_cast<GifByteType>(i), 0, 255};
  const std::pair<const char*, std::string> seeds[] = {
      {"seed.gif", tc::test::encode_gif(pixels.data(), w, h, palette, false)},
      {"interlaced.gif", tc::test::encode_gif(pixels.data(), w, h, palette, true)},
      {"grey.png", tc::test::encode_png(pixels.data(), w, h, 1)},
      {"rgb.png", tc::test::encode_png(pixels.data(), w, h, 3)},
      {"rgba.png", tc::test::encode_png(pixels.data(), w, h, 4)},
      {"seed.jpg", tc::test::encode_jpeg(pixels.data(), w, h, 80)},
      {"seed.webp", tc::test::encode_webp_lossless(pixels.data(), w, h)},
  };
  for (const auto& [name, bytes] : seeds) {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    out << bytes;
    if (!out) {
      std::fprintf(stderr, "image_fuzz_seeds: cannot write into %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}
