// error_response (see error_response.h).
#include "server/http/error_response.h"

#include "server/openai_errors.h"

namespace tc::server::http {
namespace {

const char* reason(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

}  // namespace

std::string error_response(const HttpError& error, const HeaderList& extra) {
  const std::string type = error.status == 503 ? "unavailable_error"
                           : error.status >= 500 ? "server_error"
                                                 : "invalid_request_error";
  const std::string body = error_body({error.status, type, error.message, "", ""});
  std::string out = "HTTP/1.1 " + std::to_string(error.status) + " " + reason(error.status) + "\r\n";
  out += "Content-Type: application/json\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "Connection: close\r\n";
  if (error.status == 503) out += "Retry-After: 1\r\n";
  for (const auto& [name, value] : extra) out += name + ": " + value + "\r\n";
  out += "\r\n";
  out += body;
  return out;
}

}  // namespace tc::server::http
