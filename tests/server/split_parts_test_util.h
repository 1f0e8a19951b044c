// Test helpers shared by the split tests whose parts are reasoning, content
// and calls (gemma4_split_test.cpp, qwen3_coder_split_test.cpp): joining
// streamed parts, a reply pushed in cut pieces, the parts compared.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

namespace tc::server::test {

template <class Parts>
void add_parts(Parts& to, Parts from) {
  to.reasoning += from.reasoning;
  to.content += from.content;
  to.calls.insert(to.calls.end(), from.calls.begin(), from.calls.end());
}

// Each call's name and parsed arguments (Json: json or ordered_json); no call has an id.
template <class Json, class Parts>
std::vector<std::pair<std::string, Json>> calls_of_parts(const Parts& p) {
  std::vector<std::pair<std::string, Json>> out;
  for (const auto& c : p.calls) {
    CHECK(c.id.empty());
    out.emplace_back(c.name, Json::parse(c.arguments));
  }
  return out;
}

// `reply` pushed to `s` in pieces cut at `cuts` (ascending offsets), then finished.
template <class Parts, class Stream>
Parts streamed_cut(Stream& s, std::string_view reply, const std::vector<size_t>& cuts) {
  Parts out;
  size_t at = 0;
  for (const size_t cut : cuts) {
    add_parts(out, s.push(reply.substr(at, cut - at)));
    at = cut;
  }
  add_parts(out, s.push(reply.substr(at)));
  add_parts(out, s.finish());
  return out;
}

template <class Parts>
void check_same_parts(const Parts& got, const Parts& want) {
  CHECK(got.reasoning == want.reasoning);
  CHECK(got.content == want.content);
  REQUIRE(got.calls.size() == want.calls.size());
  for (size_t i = 0; i < got.calls.size(); ++i) {
    CHECK(got.calls[i].name == want.calls[i].name);
    CHECK(got.calls[i].arguments == want.calls[i].arguments);
  }
}

}  // namespace tc::server::test
