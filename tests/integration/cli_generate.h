// `thermocline generate` as the CLI tests run it: the continuation printed
// on stdout (the stderr lines dropped); the command must succeed.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "tests/test_util.h"

namespace tc::test {

inline std::string generated(const std::string& args) {
  // std::string("(").append(...): GCC 12 warns (-Wrestrict, a false positive) on "(" + std::string.
  const auto r = run_command(
      std::string("(").append(thermocline_binary().string()).append(" generate ").append(args).append(" 2>/dev/null)"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

}  // namespace tc::test
