// The built-in web page's files (server/webui/), embedded at build time by
// cmake/embed_webui.cmake into a generated webui_assets.cpp.
#pragma once

#include <span>
#include <string_view>

namespace tc::server {

struct WebAsset {
  std::string_view name;          // file name, e.g. "index.html", "app.js"
  std::string_view content_type;  // "text/html; charset=utf-8", ...
  std::string_view data;          // the file's bytes
};

// Every file, sorted by name; static storage.
std::span<const WebAsset> web_assets();

}  // namespace tc::server
