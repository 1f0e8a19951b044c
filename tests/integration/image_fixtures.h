// Images for the vision tests: a seeded PNG (stb_image_write, from Debian's
// libstb) and base64 as the image routes take it.
#pragma once

#include <stb_image_write.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tc::test {

// A w x h RGB PNG of a pattern chosen by `seed`.
inline std::string test_png(int w, int h, int seed) {
  std::vector<unsigned char> rgb(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < rgb.size(); ++i) {
    rgb[i] = static_cast<unsigned char>((i * 37 + static_cast<size_t>(seed) * 101) % 251);
  }
  std::string out;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (stbi_write_png_to_func(append, &out, w, h, 3, rgb.data(), w * 3) == 0) {
    throw std::runtime_error("stbi_write_png_to_func failed");
  }
  return out;
}

// RFC 4648 base64, padded.
inline std::string base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t left = bytes.size() - i;
    auto byte = [&](size_t k) { return k < left ? static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + k])) : 0u; };
    const uint32_t v = byte(0) << 16 | byte(1) << 8 | byte(2);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(left > 1 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back(left > 2 ? kAlphabet[v & 63] : '=');
  }
  return out;
}

}  // namespace tc::test
