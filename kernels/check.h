// Always-on invariant checks: CHECK(cond, "what broke") throws
// tc::InvariantError with the file and line. Used for programming errors,
// never for bad input (bad input gets a typed error of its own).
#pragma once

#include <stdexcept>
#include <string>

namespace tc {

class InvariantError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void check_failed(const char* cond, const char* what, const char* file, int line);

}  // namespace tc

#define TC_CHECK(cond, what)                                          \
  do {                                                                \
    if (!(cond)) ::tc::check_failed(#cond, (what), __FILE__, __LINE__); \
  } while (0)
