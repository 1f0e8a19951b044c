// Images for the vision tests over HTTP: a seeded PNG (tests/image_encode.h)
// and base64 as the image routes take it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/image_encode.h"

namespace tc::test {

// RFC 4648 base64, padded.
inline std::string base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t left = bytes.size() - i;
    auto byte = [&](size_t k) {
      return k < left ? static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + k])) : 0u;
    };
    const uint32_t v = byte(0) << 16 | byte(1) << 8 | byte(2);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(left > 1 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back(left > 2 ? kAlphabet[v & 63] : '=');
  }
  return out;
}

}  // namespace tc::test
