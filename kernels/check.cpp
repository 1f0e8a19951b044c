// The failure path of TC_CHECK.
#include "kernels/check.h"

#include <string>

namespace tc {

void check_failed(const char* cond, const char* what, const char* file, int line) {
  throw InvariantError(std::string("CHECK failed: ") + what + " (" + cond + ") at " + file + ":" +
                       std::to_string(line));
}

}  // namespace tc
