// The fill-in-the-middle prompt (fill_in_middle.h) on a small character-level
// SPM vocabulary with Qwen's FIM markers: the plain layout with and without
// BOS, the cut that keeps the code nearest the cursor (prefix's end,
// suffix's start, 3:1) and moves in steps as the prefix grows, the
// repo-level layout of llama.cpp's /infill with and without the repo
// tokens, /infill's prompt after the prefix, and the refusal naming the
// missing markers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/text/tokenizer.h"
#include "server/fill_in_middle.h"
#include "tests/engine/text/text_test_util.h"

using namespace tc::server;
using tc::text::TokenId;
using tc::text::Tokenizer;
using tc::text::TokenType;
using tc::text::Vocab;

namespace {

// An SPM vocab of "▁" and a..z (one token per letter) after llama's fixed
// tokens, then `specials` as control tokens; no space prefix.
Vocab letters_vocab(const std::vector<std::string>& specials, bool add_bos) {
  std::vector<std::pair<std::string, float>> pieces = {{"\xE2\x96\x81", -1.0f}};
  for (char c = 'a'; c <= 'z'; ++c) pieces.emplace_back(std::string(1, c), -2.0f);
  Vocab v = tc::text::test::spm_vocab(pieces);
  for (const auto& s : specials) {
    v.tokens.push_back(s);
    v.types.push_back(TokenType::Control);
    v.scores.push_back(0.0f);
  }
  v.add_bos = add_bos;
  v.add_space_prefix = false;
  return v;
}

const std::vector<std::string> kQwenMarkers = {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>",
                                               "<|repo_name|>",  "<|file_sep|>"};

std::vector<TokenId> plain(const Tokenizer& tok, const std::string& text) {
  tc::text::EncodeOptions o;
  o.add_special = false;
  return tok.encode(text, o);
}

std::vector<TokenId> cat(std::initializer_list<std::vector<TokenId>> parts) {
  std::vector<TokenId> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST_CASE("FIM prompt: [BOS] <PRE> prefix <SUF> suffix <MID>, cut only when it must", "[server][fim]") {
  for (const bool bos : {true, false}) {
    INFO("add_bos " << bos);
    const auto tok = Tokenizer::create(letters_vocab(kQwenMarkers, bos));
    const auto& fim = tok->vocab().fim;
    REQUIRE(fim.can_infill());
    REQUIRE(fim_refusal(tok->vocab()).empty());
    FimInput in;
    in.prefix = "def";
    in.suffix = "ret";
    const FimPrompt p = build_fim_prompt(*tok, in, 1000);
    const std::vector<TokenId> head = bos ? std::vector<TokenId>{1} : std::vector<TokenId>{};
    CHECK(p.ids == cat({head, {fim.pre}, plain(*tok, "def"), {fim.suf}, plain(*tok, "ret"), {fim.mid}}));
    CHECK_FALSE(p.truncated);
    // Exactly the room it needs: not cut.
    CHECK_FALSE(build_fim_prompt(*tok, in, static_cast<int64_t>(p.ids.size())).truncated);
  }
}

TEST_CASE("FIM prompt cut to the room: the prefix keeps its end, the suffix its start, 3:1", "[server][fim]") {
  const auto tok = Tokenizer::create(letters_vocab(kQwenMarkers, false));
  const auto& fim = tok->vocab().fim;
  const std::string prefix = "abcdefghijklmnopqrstuvwxyzabcdefghijklmn";  // 40 letters: 40 tokens
  const std::string suffix = "zyxwvutsrqponmlkjihgfedcbazyxwvutsrqponm";
  REQUIRE(plain(*tok, prefix).size() == 40);
  FimInput in;
  in.prefix = prefix;
  in.suffix = suffix;
  // Room for 20 of the 80 tokens after the three markers: 15 + 5.
  FimPrompt p = build_fim_prompt(*tok, in, 3 + 20);
  CHECK(p.truncated);
  CHECK(p.ids == cat({{fim.pre}, plain(*tok, prefix.substr(25)), {fim.suf}, plain(*tok, suffix.substr(0, 5)),
                      {fim.mid}}));
  // A short prefix leaves the suffix the rest of the room.
  in.prefix = "abc";
  p = build_fim_prompt(*tok, in, 3 + 20);
  CHECK(p.ids == cat({{fim.pre}, plain(*tok, "abc"), {fim.suf}, plain(*tok, suffix.substr(0, 17)), {fim.mid}}));
  // And a short suffix the prefix.
  in.prefix = prefix;
  in.suffix = "zy";
  p = build_fim_prompt(*tok, in, 3 + 20);
  CHECK(p.ids == cat({{fim.pre}, plain(*tok, prefix.substr(22)), {fim.suf}, plain(*tok, "zy"), {fim.mid}}));
  // No room at all: the markers alone (the caller's context check decides).
  p = build_fim_prompt(*tok, in, 0);
  CHECK(p.ids == std::vector<TokenId>{fim.pre, fim.suf, fim.mid});
  CHECK(p.truncated);
}

TEST_CASE("FIM prompt cut in steps: typing at the cursor keeps the prompt's start for a step", "[server][fim]") {
  const auto tok = Tokenizer::create(letters_vocab(kQwenMarkers, false));
  const auto& fim = tok->vocab().fim;
  std::string letters;
  for (int i = 0; i < 403; ++i) letters += static_cast<char>('a' + i % 26);
  FimInput in;
  in.suffix = letters.substr(0, 400);
  // Room 200: the suffix's quarter is 50, the prefix fits 150, cut in steps
  // of 150 / 8 = 18 tokens from its start: 400 letters drop 252 (14 steps).
  const auto kept_prefix = [&](size_t n) {
    in.prefix = letters.substr(0, n);
    const FimPrompt p = build_fim_prompt(*tok, in, 3 + 200);
    CHECK(p.truncated);
    CHECK(p.ids.size() == 203);  // the suffix takes what the step frees
    const auto suf = std::find(p.ids.begin(), p.ids.end(), fim.suf);
    REQUIRE(suf != p.ids.end());
    return std::vector<TokenId>(p.ids.begin() + 1, suf);
  };
  for (size_t n = 400; n <= 402; ++n) {
    INFO(n << " letters");
    CHECK(kept_prefix(n) == plain(*tok, letters.substr(252, n - 252)));
  }
  CHECK(kept_prefix(403) == plain(*tok, letters.substr(270, 403 - 270)));  // the next step
}

TEST_CASE("FIM prompt, repo level: llama.cpp's /infill layout with and without the repo tokens", "[server][fim]") {
  // middle_start is parsed with its special tokens, as llama.cpp reads /infill's prompt.
  const FimInput in{.prefix = "ab",
                    .suffix = "cd",
                    .middle_start = "ef<|fim_middle|>",
                    .extra = {{"x.py", "xyz"}, {"tmp", "uv"}},
                    .repo_level = true};
  {
    const auto tok = Tokenizer::create(letters_vocab(kQwenMarkers, true));
    const auto& fim = tok->vocab().fim;
    const FimPrompt p = build_fim_prompt(*tok, in, 1000);
    CHECK(p.ids == cat({{fim.rep}, plain(*tok, "myproject\n"), {fim.sep}, plain(*tok, "x.py\n"), plain(*tok, "xyz"),
                        {fim.sep}, plain(*tok, "tmp\n"), plain(*tok, "uv"), {fim.sep}, plain(*tok, "filename\n"),
                        {1, fim.pre}, plain(*tok, "ab"), plain(*tok, "ef"), {fim.mid, fim.suf}, plain(*tok, "cd"),
                        {fim.mid}}));
    // Cut: the files lose their start first; prefix and suffix are whole.
    const int64_t without_files = 1 + 1 + 2 + 3 + 1 + 2 + 1;
    const FimPrompt cut = build_fim_prompt(*tok, in, without_files + 3);
    CHECK(cut.truncated);
    CHECK(std::vector<TokenId>(cut.ids.begin(), cut.ids.begin() + 3) ==
          std::vector<TokenId>(p.ids.end() - without_files - 3, p.ids.end() - without_files));
    CHECK(std::vector<TokenId>(cut.ids.begin() + 3, cut.ids.end()) ==
          std::vector<TokenId>(p.ids.end() - without_files, p.ids.end()));
  }
  {
    // Without <|repo_name|> and <|file_sep|>: each file after a snippet line.
    const auto tok = Tokenizer::create(letters_vocab({"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"}, false));
    const auto& fim = tok->vocab().fim;
    const FimPrompt p = build_fim_prompt(*tok, in, 1000);
    const auto snippet = plain(*tok, "\n\n--- snippet ---\n\n");
    CHECK(p.ids == cat({snippet, plain(*tok, "xyz"), snippet, plain(*tok, "uv"), {fim.pre}, plain(*tok, "ab"),
                        plain(*tok, "ef"), {fim.mid, fim.suf}, plain(*tok, "cd"), {fim.mid}}));
  }
}

TEST_CASE("FIM refusal names the missing markers", "[server][fim]") {
  const auto none = Tokenizer::create(letters_vocab({}, true));
  CHECK_THAT(fim_refusal(none->vocab()), Catch::Contains("no prefix and suffix and middle token"));
  const auto some = Tokenizer::create(letters_vocab({"<|fim_prefix|>", "<|fim_suffix|>"}, true));
  CHECK_THAT(fim_refusal(some->vocab()), Catch::Contains("no middle token"));
}
