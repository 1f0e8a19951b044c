// The option table, serve_options.h, the example config file and
// docs/configuration.md agree: every key is in each of them.
#include <catch2/catch.hpp>

#include <regex>
#include <set>

#include "config/serve_config.h"
#include "config/serve_option_table.h"
#include "tests/config/config_test_util.h"
#include "tests/test_util.h"

namespace {

std::filesystem::path source_path(const std::string& relative) {
  return std::filesystem::path(THERMOCLINE_SOURCE_DIR) / relative;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("the option table has exactly the keys of serve_options.h", "[config]") {
  const std::string header = tc::test::read_file(source_path("config/serve_options.h"));
  const std::regex key_comment(R"(\(key: ([a-z_]+)\))");
  std::set<std::string> header_keys;
  for (auto it = std::sregex_iterator(header.begin(), header.end(), key_comment); it != std::sregex_iterator(); ++it) {
    header_keys.insert((*it)[1].str());
  }
  std::set<std::string> table_keys;
  for (const auto& d : tc::config::serve_option_table()) {
    CHECK(table_keys.insert(std::string(d.key)).second);  // no key twice
    CHECK(contains(std::string(d.flags), d.long_flag()));
  }
  CHECK(header_keys.size() >= 24);
  CHECK(header_keys == table_keys);
}

TEST_CASE("the example config file loads and equals the defaults", "[config]") {
  const auto example = source_path("config/thermocline.example.toml");
  const auto o = tc::test::resolve({"--config", example.string()});
  CHECK(tc::config::to_toml(o, false) == tc::config::to_toml(tc::config::ServeOptions{}, false));
}

TEST_CASE("the example config file sets and documents every key", "[config]") {
  const std::string text = tc::test::read_file(source_path("config/thermocline.example.toml"));
  for (const auto& d : tc::config::serve_option_table()) {
    INFO(d.key);
    const std::regex assignment("(^|\\n)" + std::string(d.key) + " = ");
    CHECK(std::regex_search(text, assignment));
    CHECK(contains(text, d.env_name()));
    CHECK(contains(text, d.long_flag()));
  }
}

TEST_CASE("docs/configuration.md lists every key, flag and env variable", "[config]") {
  const std::string doc = tc::test::read_file(source_path("docs/configuration.md"));
  for (const auto& d : tc::config::serve_option_table()) {
    INFO(d.key);
    CHECK(contains(doc, "`" + std::string(d.key) + "`"));
    CHECK(contains(doc, d.env_name()));
    CHECK(contains(doc, d.long_flag()));
  }
  CHECK(contains(doc, "THERMOCLINE_API_KEY`"));
  CHECK(contains(doc, "THERMOCLINE_CONFIG"));
  CHECK(contains(doc, "--print-config"));
}
