// The embedded web page: the files the page loads are all there, every URL
// in them is relative (so the page works under a reverse proxy's path
// prefix), nothing is fetched from another host, and the whole page stays
// under 300 KB of the binary.
#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <string>

#include "server/webui_assets.h"

namespace {

const tc::server::WebAsset* find(std::string_view name) {
  for (const auto& a : tc::server::web_assets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("the embedded page is complete, relative and small", "[server][webui]") {
  size_t total = 0;
  std::set<std::string> names;
  for (const auto& a : tc::server::web_assets()) {
    INFO(a.name);
    CHECK(!a.data.empty());
    total += a.data.size();
    names.insert(std::string(a.name));
    std::string text(a.data);
    // The SVG namespace is a name, not a URL the page loads.
    for (size_t at; (at = text.find("http://www.w3.org/2000/svg")) != std::string::npos;) text.erase(at, 26);
    // No other host, no absolute path: a prefix like /thermocline/ must work.
    CHECK(text.find("http://") == std::string::npos);
    CHECK(text.find("https://") == std::string::npos);
    CHECK_FALSE(std::regex_search(text, std::regex(R"((src|href)="/)")));
    CHECK_FALSE(std::regex_search(text, std::regex(R"(fetch\(\s*["'`]/)")));
  }
  CHECK(total < 300 * 1024);
  const auto* index = find("index.html");
  REQUIRE(index != nullptr);
  CHECK(find("index.html")->content_type == "text/html; charset=utf-8");
  // Every script and stylesheet index.html names, and every module imported, is embedded.
  const std::regex reference(R"((?:src|href)="webui/([a-z0-9_.-]+)\"|from "\./([a-z0-9_.-]+)\")");
  for (const auto& a : tc::server::web_assets()) {
    const std::string text(a.data);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), reference); it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
      INFO(a.name << " refers to " << name);
      CHECK(names.count(name) == 1);
    }
  }
  CHECK(find("app.js") != nullptr);
  CHECK(find("markdown.js") != nullptr);
  // The page runs no inline script (its Content-Security-Policy forbids it).
  CHECK(std::string(index->data).find("<script>") == std::string::npos);
}
