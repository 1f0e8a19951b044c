// Message formatting of ModelLoadError.
#include "engine/gguf/model_load_error.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace tc::gguf {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t utf8_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf)) return 0;
  }
  return n;
}

std::string compose(const std::string& file, const std::string& item, std::string_view kind,
                    const std::string& problem) {
  std::string msg = printable(file, 4096);
  msg += ": ";
  if (!item.empty()) {
    if (!kind.empty()) {
      msg += kind;
      msg += ' ';
    }
    msg += '\'';
    msg += printable(item);
    msg += "': ";
  }
  msg += problem;
  return msg;
}

}  // namespace

ModelLoadError::ModelLoadError(std::string file, std::string item, const std::string& problem)
    : ModelLoadError(std::move(file), std::move(item), std::string_view{}, problem) {}

ModelLoadError::ModelLoadError(std::string file, std::string item, std::string_view kind,
                               const std::string& problem)
    : std::runtime_error(compose(file, item, kind, problem)),
      file_(std::move(file)),
      item_(std::move(item)) {}

ModelLoadError ModelLoadError::for_key(std::string file, std::string key,
                                       const std::string& problem) {
  return ModelLoadError(std::move(file), std::move(key), "key", problem);
}

ModelLoadError ModelLoadError::for_tensor(std::string file, std::string name,
                                          const std::string& problem) {
  return ModelLoadError(std::move(file), std::move(name), "tensor", problem);
}

std::string printable(std::string_view s, size_t max_len) {
  std::string out;
  out.reserve(std::min(s.size(), max_len) + 8);
  size_t i = 0;
  while (i < s.size()) {
    if (i >= max_len) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      out += "\\\\";
      ++i;
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (const size_t n = c >= 0x80 ? utf8_length(s, i) : 0; n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    }
  }
  return out;
}

}  // namespace tc::gguf
