// Image decoding (libpng's simplified API, libjpeg-turbo's TurboJPEG,
// libwebp, giflib), resizing and normalising.
#include "engine/vision/image_pixels.h"

#include <gif_lib.h>
#include <png.h>
#include <turbojpeg.h>
#include <webp/decode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

namespace tc::vision {

namespace {

void check_size(int64_t w, int64_t h) {
  if (w <= 0 || h <= 0 || w > kMaxImageSide || h > kMaxImageSide || w * h > kMaxImagePixels) {
    throw ImageError("the image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels; at most " +
                     std::to_string(kMaxImageSide) + " per side and " + std::to_string(kMaxImagePixels) +
                     " in all are read");
  }
}

bool starts_with(std::span<const std::byte> bytes, std::string_view magic, size_t at = 0) {
  return bytes.size() >= at + magic.size() && std::memcmp(bytes.data() + at, magic.data(), magic.size()) == 0;
}

// PNG, read as RGBA and the alpha dropped (the colour values kept as
// stored, as llama.cpp's stb_image gives them).
RgbImage decode_png(std::span<const std::byte> bytes) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()) == 0) {
    throw ImageError(std::string("the PNG could not be decoded (") + png.message + ")");
  }
  std::unique_ptr<png_image, void (*)(png_image*)> guard(&png, png_image_free);
  check_size(png.width, png.height);
  png.format = PNG_FORMAT_RGBA;
  std::vector<uint8_t> rgba(PNG_IMAGE_SIZE(png));
  if (png_image_finish_read(&png, nullptr, rgba.data(), 0, nullptr) == 0) {
    throw ImageError(std::string("the PNG could not be decoded (") + png.message + ")");
  }
  RgbImage out{static_cast<int>(png.width), static_cast<int>(png.height), {}};
  out.rgb.resize(static_cast<size_t>(out.width) * out.height * 3);
  for (size_t i = 0, n = out.rgb.size() / 3; i < n; ++i) std::memcpy(&out.rgb[i * 3], &rgba[i * 4], 3);
  return out;
}

RgbImage decode_jpeg(std::span<const std::byte> bytes) {
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitDecompress(), tjDestroy);
  if (!tj) throw ImageError("the JPEG decoder could not start");
  auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto size = static_cast<unsigned long>(bytes.size());
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj.get(), data, size, &w, &h, &subsamp, &colorspace) != 0) {
    throw ImageError(std::string("the JPEG could not be decoded (") + tjGetErrorStr2(tj.get()) + ")");
  }
  check_size(w, h);
  RgbImage out{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
  // Warnings (a truncated file's grey rest) still give pixels; errors do not.
  if (tjDecompress2(tj.get(), data, size, out.rgb.data(), w, 0, h, TJPF_RGB, 0) != 0 &&
      tjGetErrorCode(tj.get()) != TJERR_WARNING) {
    throw ImageError(std::string("the JPEG could not be decoded (") + tjGetErrorStr2(tj.get()) + ")");
  }
  return out;
}

RgbImage decode_webp(std::span<const std::byte> bytes) {
  auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  int w = 0, h = 0;
  if (WebPGetInfo(data, bytes.size(), &w, &h) == 0) throw ImageError("the WebP image could not be decoded");
  check_size(w, h);
  std::unique_ptr<uint8_t, void (*)(void*)> rgb(WebPDecodeRGB(data, bytes.size(), &w, &h), WebPFree);
  if (!rgb) throw ImageError("the WebP image could not be decoded");
  return {w, h, std::vector<uint8_t>(rgb.get(), rgb.get() + static_cast<size_t>(w) * h * 3)};
}

// giflib reads through this: the bytes and how far it has read.
struct GifSource {
  std::span<const std::byte> bytes;
  size_t at = 0;
};

int read_gif(GifFileType* gif, GifByteType* out, int n) {
  auto* source = static_cast<GifSource*>(gif->UserData);
  const size_t k = std::min(static_cast<size_t>(std::max(n, 0)), source->bytes.size() - source->at);
  std::memcpy(out, source->bytes.data() + source->at, k);
  source->at += k;
  return static_cast<int>(k);
}

[[noreturn]] void gif_error(int code) {
  const char* why = GifErrorString(code);
  throw ImageError(std::string("the GIF could not be decoded (") + (why ? why : "unknown error") + ")");
}

// A GIF's first frame on its canvas (black where the frame does not reach),
// interlaced rows put back in order; the palette's colours, transparency
// ignored. Read record by record, so that only the canvas (checked
// against the limits first) is ever allocated.
RgbImage decode_gif(std::span<const std::byte> bytes) {
  GifSource source{bytes};
  int error = 0;
  auto close = [](GifFileType* g) { DGifCloseFile(g, nullptr); };
  std::unique_ptr<GifFileType, decltype(close)> gif(DGifOpen(&source, read_gif, &error), close);
  if (!gif) gif_error(error);
  check_size(gif->SWidth, gif->SHeight);
  RgbImage out{gif->SWidth, gif->SHeight, {}};
  out.rgb.assign(static_cast<size_t>(out.width) * out.height * 3, 0);
  for (;;) {
    GifRecordType type = UNDEFINED_RECORD_TYPE;
    if (DGifGetRecordType(gif.get(), &type) == GIF_ERROR) gif_error(gif->Error);
    if (type == TERMINATE_RECORD_TYPE) throw ImageError("the GIF holds no image");
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* block = nullptr;
      if (DGifGetExtension(gif.get(), &code, &block) == GIF_ERROR) gif_error(gif->Error);
      while (block != nullptr) {
        if (DGifGetExtensionNext(gif.get(), &block) == GIF_ERROR) gif_error(gif->Error);
      }
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(gif.get()) == GIF_ERROR) gif_error(gif->Error);
    const GifImageDesc& d = gif->Image;
    if (d.Left < 0 || d.Top < 0 || d.Width <= 0 || d.Height <= 0 || d.Left + d.Width > out.width ||
        d.Top + d.Height > out.height) {
      throw ImageError("the GIF's first frame does not lie within its canvas");
    }
    const ColorMapObject* palette = d.ColorMap != nullptr ? d.ColorMap : gif->SColorMap;
    if (palette == nullptr || palette->Colors == nullptr) throw ImageError("the GIF has no colour table");
    std::vector<GifPixelType> line(static_cast<size_t>(d.Width));
    // Interlaced: every 8th row from 0, every 8th from 4, every 4th from 2, every 2nd from 1.
    const int first[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
    for (int pass = 0; pass < (d.Interlace ? 4 : 1); ++pass) {
      for (int y = d.Interlace ? first[pass] : 0; y < d.Height; y += d.Interlace ? step[pass] : 1) {
        if (DGifGetLine(gif.get(), line.data(), d.Width) == GIF_ERROR) gif_error(gif->Error);
        uint8_t* row = out.rgb.data() + (static_cast<size_t>(d.Top + y) * out.width + d.Left) * 3;
        for (int x = 0; x < d.Width; ++x) {
          const int index = line[static_cast<size_t>(x)];
          if (index >= palette->ColorCount) continue;  // outside the palette: left black
          const GifColorType& c = palette->Colors[index];
          row[x * 3] = c.Red;
          row[x * 3 + 1] = c.Green;
          row[x * 3 + 2] = c.Blue;
        }
      }
    }
    return out;
  }
}

}  // namespace

RgbImage decode_image(std::span<const std::byte> bytes) {
  if (bytes.empty()) throw ImageError("the image is empty");
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n")) return decode_png(bytes);
  if (starts_with(bytes, "\xff\xd8\xff")) return decode_jpeg(bytes);
  if (starts_with(bytes, "RIFF") && starts_with(bytes, "WEBP", 8)) return decode_webp(bytes);
  if (starts_with(bytes, "GIF87a") || starts_with(bytes, "GIF89a")) return decode_gif(bytes);
  throw ImageError("the image is not PNG, JPEG, WebP or GIF (the formats read)");
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
