// post_json_route: reads a POST body through httplib's content reader and
// hands it to the route parsed (json_post_route.h says why).
#include "server/json_post_route.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "server/openai_schema.h"

namespace tc::server {
namespace {

ParsedBody read_json_body(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read,
                          int64_t max_bytes) {
  ParsedBody out;
  // httplib would hand a multipart body's parts to a receiver this route
  // does not have.
  if (req.is_multipart_form_data()) {
    out.error = invalid_request("request body must be JSON, not multipart/form-data");
    return out;
  }
  std::string body;
  // The HTTP layer has the whole body already and gives its exact length:
  // one allocation instead of a doubling series of copies.
  const uint64_t length = std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
  body.reserve(static_cast<size_t>(std::min<uint64_t>(length, static_cast<uint64_t>(max_bytes))));
  bool too_large = false;
  const bool complete = read([&](const char* data, size_t n) {
    // Past the limit the rest is read and dropped, so that the connection
    // stays in step for the next request.
    too_large = too_large || body.size() + n > static_cast<size_t>(max_bytes);
    if (!too_large) body.append(data, n);
    return true;
  });
  if (too_large || res.status == 413) {  // 413: a Content-Length over the limit, which httplib skipped
    out.error = body_too_large_error();
  } else if (!complete) {
    out.error = invalid_request(
        "the request body could not be read (it needs a Content-Length header or chunked transfer encoding)");
  } else {
    out = parse_json_body(body, max_bytes);
    out.text = std::move(body);
  }
  return out;
}

}  // namespace

void post_json_route(httplib::Server& http, const std::string& pattern, int64_t max_body_bytes,
                     JsonPostHandler handler) {
  http.Post(pattern, [max_body_bytes, handler = std::move(handler)](
                         const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read) {
    handler(req, read_json_body(req, res, read, max_body_bytes), res);
  });
}

}  // namespace tc::server
