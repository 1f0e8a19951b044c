// The device setting: every accepted spelling, the round trip to text, the
// rejections with what was wrong, and the serve key using the same rule.
#include <catch2/catch.hpp>

#include <string>

#include "config/device_setting.h"
#include "config/serve_options.h"

TEST_CASE("the --device values parse, and bad ones say what is accepted", "[config][device]") {
  using tc::config::parse_device_setting;
  CHECK_FALSE(parse_device_setting("cpu").cuda);
  CHECK(parse_device_setting("cuda").cuda);
  CHECK(parse_device_setting("cuda").index == 0);
  CHECK(parse_device_setting("cuda:0").index == 0);
  CHECK(parse_device_setting("cuda:3").index == 3);
  CHECK(parse_device_setting("cuda:63").index == 63);
  for (const char* text : {"cpu", "cuda", "cuda:2"}) {
    CHECK(tc::config::device_setting_string(parse_device_setting(text)) == text);
  }
  CHECK(tc::config::device_setting_string(parse_device_setting("cuda:0")) == "cuda");
  for (const char* text : {"", "CPU", "gpu", "cuda:", "cuda:-1", "cuda:64", "cuda:1x", "cuda: 1", " cuda", "cuda:+1",
                           "cuda:99999999999999999999", "cpu:0"}) {
    INFO("'" << text << "'");
    CHECK_THROWS_WITH(parse_device_setting(text),
                      Catch::Contains("cuda:N") && Catch::Contains("'" + std::string(text) + "'"));
  }
}

TEST_CASE("the serve key device is validated with the same rule", "[config][device]") {
  tc::config::ServeOptions o;
  CHECK(o.device == "cpu");
  o.device = "cuda:1";
  CHECK_NOTHROW(tc::config::validate(o));
  o.device = "tpu";
  CHECK_THROWS_WITH(tc::config::validate(o), Catch::Contains("'device'") && Catch::Contains("'tpu'"));
}
