// vram_budget / --vram-budget values: bytes and units (binary for K/M/G/T and
// KiB..TiB, decimal for KB..TB), fractions, garbage rejected naming the value.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "config/byte_size.h"

using tc::config::parse_byte_size;

TEST_CASE("placement: byte sizes parse as plain bytes or with a binary or decimal unit", "[config][byte_size]") {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  CHECK(parse_byte_size("0") == 0);
  CHECK(parse_byte_size("123456789") == 123456789);
  CHECK(parse_byte_size("9223372036854775807") == 9223372036854775807ull);
  CHECK(parse_byte_size("512B") == 512);
  CHECK(parse_byte_size("12GiB") == 12 * kGiB);
  CHECK(parse_byte_size("12 GiB") == 12 * kGiB);
  CHECK(parse_byte_size("1.5GiB") == 3 * kGiB / 2);
  CHECK(parse_byte_size("800MiB") == 800ull << 20);
  CHECK(parse_byte_size("64KiB") == 65536);
  CHECK(parse_byte_size("2TiB") == 2ull << 40);
  // Bare letters are binary; an SI unit spelled with B and no i is decimal.
  CHECK(parse_byte_size("8G") == 8 * kGiB);
  CHECK(parse_byte_size("8g") == 8 * kGiB);
  CHECK(parse_byte_size("8GB") == 8'000'000'000ull);
  CHECK(parse_byte_size("8gb") == 8'000'000'000ull);
  CHECK(parse_byte_size("3M") == 3ull << 20);
  CHECK(parse_byte_size("3MB") == 3'000'000ull);
  CHECK(parse_byte_size("1K") == 1024);
  CHECK(parse_byte_size("1KB") == 1000);
  CHECK(parse_byte_size("1TB") == 1'000'000'000'000ull);
  // Fractions round down to whole bytes.
  CHECK(parse_byte_size("0.5KiB") == 512);
  CHECK(parse_byte_size("1.0001KiB") == 1024);
  CHECK(parse_byte_size("0.1GB") == 100'000'000ull);
  CHECK(parse_byte_size("0.333333333333333333GiB") == 357913941);  // floor(2^30 / 3)
}

TEST_CASE("placement: garbage budgets are rejected with a message naming the value", "[config][byte_size]") {
  for (const std::string bad : {"", "GiB", "-1", "-4GiB", "12XB", "12 G B", "1.5", "1.", ".5GiB", "1e9", "12GiB ",
                                " 12GiB", "12  GiB", "0x100", "1,5GiB", "nan", "12GiBs", "9223372036854775808",
                                "8388608TiB", "99999999999999999999", "1.0000000000000000001GiB"}) {
    INFO("'" << bad << "'");
    try {
      parse_byte_size(bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK_THAT(e.what(), Catch::Contains("VRAM budget '" + bad + "'") && Catch::Contains("expected bytes"));
    }
  }
  CHECK_THROWS_WITH(parse_byte_size("-1"), Catch::Contains("negative"));
  CHECK_THROWS_WITH(parse_byte_size("12XB"), Catch::Contains("unknown unit 'xb'"));
  CHECK_THROWS_WITH(parse_byte_size("8388608TiB"), Catch::Contains("too large"));
}
