// The sparsity setting: every accepted spelling, the round trip to text, the
// rejections with what was wrong, and the serve key using the same rule.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "config/serve_options.h"
#include "config/sparsity_setting.h"

TEST_CASE("the --sparsity values parse, and bad ones say what is accepted", "[config][sparsity]") {
  using tc::config::parse_sparsity_setting;
  using tc::config::SparsityMode;
  CHECK(parse_sparsity_setting("dense").mode == SparsityMode::Dense);
  CHECK(parse_sparsity_setting("auto").mode == SparsityMode::Auto);
  CHECK(parse_sparsity_setting("relu").mode == SparsityMode::Relu);
  const auto teal = parse_sparsity_setting("teal:0.4");
  CHECK(teal.mode == SparsityMode::Teal);
  CHECK(teal.teal_target == 0.4f);
  CHECK(parse_sparsity_setting("teal:0").teal_target == 0.0f);
  CHECK(parse_sparsity_setting("teal:.5").teal_target == 0.5f);
  CHECK(parse_sparsity_setting("teal:0.95").teal_target == 0.95f);
  CHECK(parse_sparsity_setting("teal:4e-1").teal_target == 0.4f);
  CHECK(!std::signbit(parse_sparsity_setting("teal:-0").teal_target));
  for (const char* text : {"dense", "auto", "relu", "teal:0.4", "teal:0", "teal:0.25"}) {
    CHECK(tc::config::sparsity_setting_string(parse_sparsity_setting(text)) == text);
  }
  for (const char* text : {"", "Dense", "sparse", "teal", "teal:", "teal:abc", "teal:0.4x", "teal: 0.4", " teal:0.4",
                           "teal:+0.4", "teal:nan", "teal:inf", "teal:0,4", "relu:0.4"}) {
    INFO("'" << text << "'");
    CHECK_THROWS_WITH(parse_sparsity_setting(text),
                      Catch::Contains("teal:X") && Catch::Contains("'" + std::string(text) + "'"));
  }
  for (const char* text : {"teal:-0.1", "teal:0.96", "teal:1", "teal:40"}) {
    INFO(text);
    CHECK_THROWS_WITH(parse_sparsity_setting(text), Catch::Contains("outside [0, 0.95]"));
  }
}

TEST_CASE("the serve key sparsity is validated with the same rule", "[config][sparsity]") {
  tc::config::ServeOptions o;
  CHECK_NOTHROW(tc::config::validate(o));
  o.sparsity = "teal:0.5";
  CHECK_NOTHROW(tc::config::validate(o));
  o.sparsity = "teal:2";
  CHECK_THROWS_WITH(tc::config::validate(o), Catch::Contains("'sparsity'") && Catch::Contains("outside"));
  o.sparsity = "auto";
  o.sparse_max_tokens = -1;
  CHECK_THROWS_WITH(tc::config::validate(o), Catch::Contains("'sparse_max_tokens'"));
}
