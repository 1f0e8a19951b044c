// The built-in web page (docs/webui.md): GET / and GET /webui/NAME serve the
// files embedded in the binary (webui_assets.h), GET /webui/config.json says
// whether API calls need a key. Public; not installed with --no-webui.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "server/request_log.h"
#include "server/route_paths.h"
#include "server/server_context.h"
#include "server/webui_assets.h"

namespace tc::server {
namespace {

// The page loads nothing from elsewhere and runs no inline script, so
// model output that slipped into the page as markup could not run either.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

std::string etag_of(std::string_view data) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("\"{:016x}\"", h);
}

struct Served {
  const WebAsset* asset;
  std::string etag;
};

void serve(ServerContext& ctx, const Served& s, const httplib::Request& req, httplib::Response& res) {
  const auto start = std::chrono::steady_clock::now();
  res.set_header("Cache-Control", "no-cache");
  res.set_header("ETag", s.etag);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  if (s.asset->name.ends_with(".html")) res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  if (req.get_header_value("If-None-Match") == s.etag) {
    res.status = 304;
  } else {
    res.status = 200;
    res.set_content(s.asset->data.data(), s.asset->data.size(), std::string(s.asset->content_type));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string route = route_label(req.path);
  ctx.metrics.record({route, res.status});
  log_request(plain_request_line(req.method, route, res.status, seconds));
}

}  // namespace

bool is_webui_path(std::string_view path) {
  const std::string route = canonical_route(path);
  return route == "/" || route.rfind("/webui/", 0) == 0;
}

void install_webui_routes(httplib::Server& http, ServerContext& ctx) {
  if (!ctx.options.webui) return;
  auto files = std::make_shared<std::unordered_map<std::string, Served>>();
  for (const WebAsset& a : web_assets()) files->emplace(std::string(a.name), Served{&a, etag_of(a.data)});
  const auto index = files->find("index.html");
  if (index == files->end()) return;  // a build without the page's files
  http.Get("/+", [&ctx, s = index->second](const httplib::Request& req, httplib::Response& res) {
    serve(ctx, s, req, res);
  });
  http.Get("/+webui/+([a-z0-9_.-]+)", [&ctx, files](const httplib::Request& req, httplib::Response& res) {
    const std::string name = req.matches[1].str();
    if (name == "config.json") {
      // Lets the page ask for the key before its first call instead of after a 401.
      send_json(res, 200, {{"api_key_required", !ctx.options.api_keys.empty()}});
      res.set_header("Cache-Control", "no-store");
      ctx.metrics.record({route_label(req.path), 200});
      log_request(plain_request_line(req.method, route_label(req.path), 200));
      return;
    }
    const auto it = files->find(name);
    if (it == files->end()) {
      send_error(res, {404, "invalid_request_error", "no route " + req.method + " " + req.path, "", ""});
      ctx.metrics.record({route_label(req.path), 404});
      log_request(plain_request_line(req.method, route_label(req.path), 404));
      return;
    }
    serve(ctx, it->second, req, res);
  });
}

}  // namespace tc::server
