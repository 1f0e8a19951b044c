// OpenAI error bodies: {"error":{"message","type","param","code"}}.
#pragma once

#include <string>

namespace tc::server {

struct ApiError {
  int status;            // HTTP status
  std::string type;      // invalid_request_error, authentication_error, ...
  std::string message;
  std::string code;      // empty: null
  std::string param;     // empty: null
};

std::string error_body(const ApiError& error);

}  // namespace tc::server
