// StringIndex: finds every key at its position (the first of equal keys),
// nothing else, merge halves as the joined key, and reports the first
// duplicate; against std::unordered_map on many generated keys.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/text/string_index.h"

using tc::text::detail::StringIndex;

TEST_CASE("string_index: finds keys, not others, and merge halves as the joined key", "[text]") {
  const std::vector<std::string> keys = {"a", "ab", "a b", "", "\xE2\x96\x81the", "c d", "a"};
  const StringIndex index(keys);
  CHECK(index.find("a") == 0);
  CHECK(index.find("ab") == 1);
  CHECK(index.find("a b") == 2);
  CHECK(index.find("") == 3);
  CHECK(index.find("\xE2\x96\x81the") == 4);
  CHECK(index.find("b") == -1);
  CHECK(index.find("abc") == -1);
  CHECK(index.find(std::string_view("a\0", 2)) == -1);
  CHECK(index.find_pair("a", "b") == 2);
  CHECK(index.find_pair("c", "d") == 5);
  CHECK(index.find_pair("a", "") == -1);
  CHECK(index.find_pair("ab", "") == -1);
  CHECK(index.find_pair("", "b") == -1);
  CHECK(index.first_duplicate() == std::pair<int32_t, int32_t>{0, 6});
}

TEST_CASE("string_index: empty and duplicate-free indexes", "[text]") {
  const std::vector<std::string> none;
  const StringIndex empty(none);
  CHECK(empty.find("x") == -1);
  CHECK(empty.find_pair("x", "y") == -1);
  CHECK(empty.first_duplicate() == std::pair<int32_t, int32_t>{-1, -1});
  CHECK(StringIndex().find("x") == -1);
}

TEST_CASE("string_index: agrees with unordered_map on 200000 random keys", "[text]") {
  std::mt19937 rng(36);
  const std::string alphabet = "abcdefgh \xC4\xA0\xE2\x96\x81";
  std::vector<std::string> keys;
  std::unordered_map<std::string, int32_t> reference;
  for (int i = 0; i < 200000; ++i) {
    std::string k;
    const int len = 1 + static_cast<int>(rng() % 9);
    for (int j = 0; j < len; ++j) k += alphabet[rng() % alphabet.size()];
    reference.emplace(k, static_cast<int32_t>(keys.size()));
    keys.push_back(std::move(k));
  }
  const StringIndex index(keys);
  size_t n_wrong = 0;
  for (const auto& [k, pos] : reference) n_wrong += index.find(k) != pos;
  for (int i = 0; i < 100000; ++i) {
    std::string probe;
    const int len = 1 + static_cast<int>(rng() % 10);
    for (int j = 0; j < len; ++j) probe += alphabet[rng() % alphabet.size()];
    const auto it = reference.find(probe);
    n_wrong += index.find(probe) != (it == reference.end() ? -1 : it->second);
    const size_t cut = rng() % (probe.size() + 1);
    const std::string joined = probe.substr(0, cut) + " " + probe.substr(cut);
    const auto jt = reference.find(joined);
    n_wrong += index.find_pair(probe.substr(0, cut), probe.substr(cut)) != (jt == reference.end() ? -1 : jt->second);
  }
  CHECK(n_wrong == 0);
  CHECK(index.first_duplicate().first >= 0);  // 200000 short keys over 11 symbols repeat
}
