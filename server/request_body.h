// A request's JSON body, parsed with its size and nesting bounded before any
// of it is built into a DOM: everything downstream (copies, the chat
// template's values, tojson, dumps) walks JSON recursively, so a body of
// 400 KB that nests arrays 200,000 deep would overflow a thread's stack.
// No HTTP here (the routes send the error), so it is unit-tested directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/openai_errors.h"

namespace tc::server {

// Arrays and objects nested deeper than this are a 400. OpenAI tool schemas
// and chat content parts nest a dozen levels at most.
inline constexpr int kMaxJsonDepth = 128;

struct ParsedBody {
  nlohmann::json json;           // set when error is empty
  std::optional<ApiError> error;  // 413 too large, 400 not JSON / too deep
  std::string text;               // the body as received (routes that need objects' member order re-read it)
};

// The 413 for a body over --max-body-bytes (every place that meets one).
ApiError body_too_large_error();

// `body` as JSON: 413 above max_bytes, 400 when it is not JSON or nests
// arrays and objects more than kMaxJsonDepth levels deep.
ParsedBody parse_json_body(std::string_view body, int64_t max_bytes);

}  // namespace tc::server
