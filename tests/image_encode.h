// Image files for the vision tests, written with the libraries the server
// decodes with: PNG (libpng's simplified API), JPEG (TurboJPEG), WebP
// (libwebp, lossless), GIF (giflib). Header-only; the suites that include
// it link them.
#pragma once

#include <gif_lib.h>
#include <png.h>
#include <turbojpeg.h>
#include <webp/encode.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tc::test {

// channels 1 (grey), 3 (RGB) or 4 (RGBA), rows top to bottom.
inline std::string encode_png(const uint8_t* pixels, int w, int h, int channels) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(w);
  png.height = static_cast<png_uint_32>(h);
  png.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  png_alloc_size_t size = 0;
  if (png_image_write_to_memory(&png, nullptr, &size, 0, pixels, 0, nullptr) == 0) throw std::runtime_error("png size");
  std::string out(size, '\0');
  if (png_image_write_to_memory(&png, out.data(), &size, 0, pixels, 0, nullptr) == 0) throw std::runtime_error("png");
  out.resize(size);
  return out;
}

inline std::string encode_jpeg(const uint8_t* rgb, int w, int h, int quality) {
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitCompress(), tjDestroy);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  if (!tj || tjCompress2(tj.get(), rgb, w, 0, h, TJPF_RGB, &jpeg, &size, TJSAMP_444, quality, 0) != 0) {
    throw std::runtime_error("jpeg");
  }
  std::string out(reinterpret_cast<const char*>(jpeg), size);
  tjFree(jpeg);
  return out;
}

inline std::string encode_webp_lossless(const uint8_t* rgb, int w, int h) {
  uint8_t* webp = nullptr;
  const size_t size = WebPEncodeLosslessRGB(rgb, w, h, w * 3, &webp);
  if (size == 0) throw std::runtime_error("webp");
  std::string out(reinterpret_cast<const char*>(webp), size);
  WebPFree(webp);
  return out;
}

// A one-frame GIF of palette indices (rows top to bottom), 256 colours;
// interlaced, the rows are written in the four passes' order.
inline std::string encode_gif(const uint8_t* indices, int w, int h, const std::vector<GifColorType>& palette,
                              bool interlace) {
  std::string out;
  auto write = [](GifFileType* gif, const GifByteType* data, int n) {
    static_cast<std::string*>(gif->UserData)->append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    return n;
  };
  int error = 0;
  GifFileType* gif = EGifOpen(&out, write, &error);
  if (gif == nullptr) throw std::runtime_error("gif open");
  ColorMapObject* map = GifMakeMapObject(256, palette.data());
  bool ok = map != nullptr && EGifPutScreenDesc(gif, w, h, 8, 0, map) != GIF_ERROR &&
            EGifPutImageDesc(gif, 0, 0, w, h, interlace, nullptr) != GIF_ERROR;
  std::vector<int> order;
  const int first[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
  for (int pass = 0; pass < (interlace ? 4 : 1); ++pass) {
    for (int y = interlace ? first[pass] : 0; y < h; y += interlace ? step[pass] : 1) order.push_back(y);
  }
  std::vector<GifPixelType> line(static_cast<size_t>(w));
  for (const int y : order) {
    std::copy_n(indices + static_cast<size_t>(y) * w, w, line.data());
    ok = ok && EGifPutLine(gif, line.data(), w) != GIF_ERROR;
  }
  ok = EGifCloseFile(gif, &error) != GIF_ERROR && ok;
  GifFreeMapObject(map);
  if (!ok) throw std::runtime_error("gif");
  return out;
}

// A w x h RGB PNG of a pattern chosen by `seed`.
inline std::string test_png(int w, int h, int seed) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < rgb.size(); ++i)
    rgb[i] = static_cast<uint8_t>((i * 37 + static_cast<size_t>(seed) * 101) % 251);
  return encode_png(rgb.data(), w, h, 3);
}

}  // namespace tc::test
