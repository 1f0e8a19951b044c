// Lookup drafts: the n-gram search (latest occurrence, longest n-gram first,
// the draft's caps) and the adaptive draft length's schedule.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/runtime/lookup_draft.h"

using tc::runtime::check_lookup_draft;
using tc::runtime::DraftLength;
using tc::runtime::lookup_draft;
using tc::text::TokenId;

TEST_CASE("lookup_draft: the tokens after the latest earlier occurrence of the last n-gram", "[lookup_draft]") {
  //                          0  1  2  3  4  5  6  7  8  9 10 11
  const std::vector<TokenId> h = {5, 1, 2, 7, 8, 1, 2, 9, 4, 6, 1, 2};
  // "1 2" occurs at 1 and 5; the latest (5) is followed by 9 4 6 1 2.
  CHECK(lookup_draft(h, 2, 2, 3) == std::vector<TokenId>{9, 4, 6});
  CHECK(lookup_draft(h, 2, 2, 100) == std::vector<TokenId>{9, 4, 6, 1, 2});
  CHECK(lookup_draft(h, 1, 1, 2) == std::vector<TokenId>{9, 4});  // "2" at 6
  CHECK(lookup_draft(h, 2, 2, 0).empty());
  // No earlier "6 1 2": the 3-gram finds nothing, the 2-gram does.
  CHECK(lookup_draft(h, 3, 3, 4).empty());
  CHECK(lookup_draft(h, 2, 3, 4) == std::vector<TokenId>{9, 4, 6, 1});
}

TEST_CASE("lookup_draft: a longer n-gram wins over a later shorter one", "[lookup_draft]") {
  //                          0  1  2  3  4  5  6  7  8  9
  const std::vector<TokenId> h = {3, 4, 5, 10, 9, 4, 5, 11, 3, 4, 5};
  // "3 4 5" recurs at 0 (then 10); "4 5" also at 5 (then 11).
  CHECK(lookup_draft(h, 2, 3, 2) == std::vector<TokenId>{10, 9});
  CHECK(lookup_draft(h, 2, 2, 2) == std::vector<TokenId>{11, 3});
}

TEST_CASE("lookup_draft: short or unrepeated histories give no draft", "[lookup_draft]") {
  CHECK(lookup_draft(std::vector<TokenId>{}, 1, 4, 8).empty());
  CHECK(lookup_draft(std::vector<TokenId>{7}, 1, 4, 8).empty());
  CHECK(lookup_draft(std::vector<TokenId>{1, 2, 3, 4, 5}, 1, 4, 8).empty());
  // A run of one token: the n-gram overlaps itself; one token follows it.
  CHECK(lookup_draft(std::vector<TokenId>{7, 7, 7}, 2, 2, 8) == std::vector<TokenId>{7});
}

TEST_CASE("DraftLength: up by 2 after a whole draft, down by 1 after a cut one", "[lookup_draft]") {
  DraftLength len(16);
  CHECK(len.current() == 4);
  len.update(4, 4);
  CHECK(len.current() == 6);
  len.update(6, 2);
  CHECK(len.current() == 5);
  for (int i = 0; i < 20; ++i) len.update(len.current(), len.current());
  CHECK(len.current() == 16);
  for (int i = 0; i < 30; ++i) len.update(len.current(), 0);
  CHECK(len.current() == 1);
  len.update(0, 0);  // no draft: no change
  CHECK(len.current() == 1);
  CHECK(DraftLength(0).current() == 0);
  CHECK(DraftLength(2).current() == 2);
}

TEST_CASE("a step drafts 16 tokens at most, or the default draft length where that is more", "[lookup_draft]") {
  CHECK(tc::runtime::LookupDraftOptions{}.step_tokens() == 16);
  CHECK(tc::runtime::LookupDraftOptions{.n_max = 8}.step_tokens() == 16);
  CHECK(tc::runtime::LookupDraftOptions{.n_max = 40}.step_tokens() == 40);
}

TEST_CASE("check_lookup_draft names the bad field", "[lookup_draft]") {
  CHECK(check_lookup_draft({}).empty());
  CHECK(check_lookup_draft({.n_max = 8, .ngram_min = 1, .ngram_max = 1}).empty());
  CHECK_THAT(check_lookup_draft({.n_max = -1}), Catch::Contains("n_max"));
  CHECK_THAT(check_lookup_draft({.n_max = 4, .ngram_min = 0}), Catch::Contains("ngram_min"));
  CHECK_THAT(check_lookup_draft({.n_max = 4, .ngram_min = 3, .ngram_max = 2}), Catch::Contains("ngram_max"));
}
