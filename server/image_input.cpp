// Inline images decoded: data: URLs and bare base64 (see image_input.h).
#include "server/image_input.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/field_error.h"

namespace tc::server {
namespace {

// The field's top-level name: "messages" of "messages[0].content[1]".
std::string param_of(const std::string& where) { return where.substr(0, where.find_first_of("[.")); }

[[noreturn]] void fail_at(const std::string& where, const std::string& what) {
  fail_field(std::string("'").append(where).append("'").append(what), param_of(where));
}

constexpr std::array<int8_t, 256> decode_table() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  }
  return table;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    const char c = s[i] >= 'A' && s[i] <= 'Z' ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
    if (c != prefix[i]) return false;
  }
  return true;
}

bool ends_with_nocase(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && starts_with_nocase(s.substr(s.size() - suffix.size()), suffix);
}

// RFC 4648 base64 -> bytes; false on anything but the alphabet,
// whitespace and the padding a final group needs.
bool decode_base64(std::string_view in, std::string& out) {
  static constexpr auto kTable = decode_table();
  out.clear();
  out.reserve(in.size() / 4 * 3 + 3);
  uint32_t group = 0;
  size_t n = 0;        // symbols of the current group
  size_t padding = 0;  // '=' seen
  for (const char c : in) {
    if (is_space(c)) continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    const int8_t v = kTable[static_cast<unsigned char>(c)];
    if (v < 0 || padding > 0) return false;  // not base64, or data after the padding
    group = (group << 6) | static_cast<uint32_t>(v);
    if (++n == 4) {
      out.push_back(static_cast<char>(group >> 16));
      out.push_back(static_cast<char>(group >> 8));
      out.push_back(static_cast<char>(group));
      group = 0;
      n = 0;
    }
  }
  // A final group of 2 or 3 symbols holds 1 or 2 bytes; its padding, when
  // present, fills it to 4.
  if (n == 1 || (padding > 0 && (n == 0 || n + padding != 4))) return false;
  if (n == 2) out.push_back(static_cast<char>(group >> 4));
  if (n == 3) {
    out.push_back(static_cast<char>(group >> 10));
    out.push_back(static_cast<char>(group >> 2));
  }
  return true;
}

std::string image_bytes(std::string_view b64, const std::string& where) {
  std::string bytes;
  if (!decode_base64(b64, bytes)) {
    fail_at(where, " is not valid base64 (RFC 4648: A-Z, a-z, 0-9, '+' and '/', optional '=' padding)");
  }
  if (bytes.empty()) fail_at(where, " holds no image data");
  if (bytes.size() > kMaxImageBytes) {
    fail_at(where, std::string(" is an image of ")
                       .append(std::to_string(bytes.size()))
                       .append(" bytes; at most ")
                       .append(std::to_string(kMaxImageBytes))
                       .append(" are accepted"));
  }
  return bytes;
}

}  // namespace

std::string image_bytes_from_base64(const std::string& b64, const std::string& where) {
  return image_bytes(b64, where);
}

std::string image_bytes_from_url(const std::string& url, const std::string& where) {
  if (!starts_with_nocase(url, "data:")) {
    fail_at(where, ": image URLs are not fetched; send the image inline as a data: URL (data:image/png;base64,...)");
  }
  const size_t comma = url.find(',');
  if (comma == std::string::npos || !ends_with_nocase(std::string_view(url).substr(0, comma), ";base64")) {
    fail_at(where, " must be a base64 data: URL (data:image/png;base64,...)");
  }
  return image_bytes(std::string_view(url).substr(comma + 1), where);
}

void fail_too_many_images(const std::string& param) {
  fail_field(std::string("a request may carry at most ").append(std::to_string(kMaxRequestImages)).append(" images"),
             param);
}

}  // namespace tc::server
