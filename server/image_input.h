// Images in requests, for models served with a vision projector: every
// API's image parts become kImageMarker in their message's text and their
// decoded bytes an entry of the request's `images`, in the same order.
// Images come inline only (a base64 data: URL, or bare base64 where the API
// sends that); URLs are not fetched. What cannot be read is a 400
// (field_error.h) naming the field, its param the field's top-level name.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tc::server {

// The text that stands for an image in a message's content (llama.cpp's marker).
inline constexpr std::string_view kImageMarker = "<__media__>";
inline constexpr size_t kMaxRequestImages = 16;
inline constexpr size_t kMaxImageBytes = 32 * 1024 * 1024;  // encoded (file) bytes per image

// A data: URL ("data:image/png;base64,...", any media type, ";base64"
// required) -> the image's bytes. Any other URL, bad base64, no data or
// more than kMaxImageBytes: a 400 naming `where` ("messages[0].content[1].image_url.url").
std::string image_bytes_from_url(const std::string& url, const std::string& where);

// Bare base64 (RFC 4648's alphabet; padding optional; whitespace and
// newlines ignored) -> the image's bytes; a 400 naming `where` otherwise.
std::string image_bytes_from_base64(const std::string& b64, const std::string& where);

// The 400 for one image more than kMaxRequestImages, naming `param`.
[[noreturn]] void fail_too_many_images(const std::string& param);

}  // namespace tc::server
