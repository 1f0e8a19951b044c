// What the request translations share (llamacpp_schema.h,
// responses_schema.h, anthropic_schema.h): the first field a body gets
// wrong is thrown as a BadField, and translated() turns it back into the
// result's `error`.
#pragma once

#include <string>

#include "server/openai_errors.h"

namespace tc::server {

struct BadField {
  ApiError error;
};

// A 400 naming `param`.
[[noreturn]] inline void fail_field(const std::string& message, const std::string& param) {
  throw BadField{ApiError{400, "invalid_request_error", message, "", param}};
}

// fn()'s result, or a Result whose `error` is the field fn() threw.
template <class Result, class Fn>
Result translated(Fn&& fn) {
  try {
    return fn();
  } catch (const BadField& e) {
    Result r;
    r.error = e.error;
    return r;
  }
}

}  // namespace tc::server
