// Pre-tokenizer splits on tricky strings. Expected values were worked out
// from the regexes' semantics (leftmost alternative, greedy runs, \s+(?!\S)
// leaving one space for the next word) and agree with Python's `regex`.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/text/pre_tokenizer.h"

using namespace tc::text;

namespace {

std::vector<std::string> split(PreTokenizer pre, const std::string& text) {
  std::vector<std::string> out;
  for (const auto w : pre_tokenize(pre, text)) out.emplace_back(w);
  return out;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("pre-tokenizer names", "[text][pre]") {
  CHECK(pre_tokenizer_from_name("default") == PreTokenizer::Default);
  CHECK(pre_tokenizer_from_name("") == PreTokenizer::Default);
  CHECK(pre_tokenizer_from_name("gpt2") == PreTokenizer::Gpt2);
  CHECK(pre_tokenizer_from_name("gpt-2") == PreTokenizer::Gpt2);
  CHECK(pre_tokenizer_from_name("llama3") == PreTokenizer::Llama3);
  CHECK(pre_tokenizer_from_name("llama-bpe") == PreTokenizer::Llama3);
  CHECK(pre_tokenizer_from_name("qwen2") == PreTokenizer::Qwen2);
  CHECK_FALSE(pre_tokenizer_from_name("tekken").has_value());
  CHECK(pre_tokenizer_ignores_merges(PreTokenizer::Llama3));
  CHECK_FALSE(pre_tokenizer_ignores_merges(PreTokenizer::Qwen2));
}

TEST_CASE("gpt2 pre-tokenizer", "[text][pre]") {
  const auto p = PreTokenizer::Gpt2;
  CHECK(split(p, "Hello world") == V{"Hello", " world"});
  CHECK(split(p, "I'm don't") == V{"I", "'m", " don", "'t"});
  CHECK(split(p, "HELLO'S") == V{"HELLO", "'", "S"});  // contractions are case-sensitive
  CHECK(split(p, "  leading") == V{" ", " leading"});
  CHECK(split(p, "trailing  ") == V{"trailing", "  "});
  CHECK(split(p, "a  b") == V{"a", " ", " b"});
  CHECK(split(p, "x\n\ny") == V{"x", "\n", "\n", "y"});
  CHECK(split(p, "123 4567") == V{"123", " 4567"});
  CHECK(split(p, "$100 + 20%") == V{"$", "100", " +", " 20", "%"});
  CHECK(split(p, "\tfoo") == V{"\t", "foo"});
  CHECK(split(p, "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC") == V{"caf\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC"});
  CHECK(split(p, "a\xE3\x80\x80" "b") == V{"a", "\xE3\x80\x80", "b"});  // U+3000 is \s
  CHECK(split(p, "").empty());
}

TEST_CASE("llama3 pre-tokenizer", "[text][pre]") {
  const auto p = PreTokenizer::Llama3;
  CHECK(split(p, "12345") == V{"123", "45"});
  CHECK(split(p, "2024-05-17") == V{"202", "4", "-", "05", "-", "17"});
  CHECK(split(p, "I'M we'LL") == V{"I", "'M", " we", "'LL"});  // case-insensitive
  CHECK(split(p, "HELLO'S") == V{"HELLO", "'S"});
  CHECK(split(p, "hello\n\n  world") == V{"hello", "\n\n", " ", " world"});
  CHECK(split(p, "ab!!\n\ncd") == V{"ab", "!!\n\n", "cd"});
  CHECK(split(p, "a \r\n b") == V{"a", " \r\n", " b"});
  CHECK(split(p, "  x") == V{" ", " x"});
  CHECK(split(p, "\tfoo") == V{"\tfoo"});  // any non-letter, non-digit, non-newline leads a word
  CHECK(split(p, "x1y") == V{"x", "1", "y"});
  CHECK(split(p, "...abc") == V{"...", "abc"});
  CHECK(split(p, ".abc") == V{".abc"});
  CHECK(split(p, "trailing  ") == V{"trailing", "  "});
}

TEST_CASE("qwen2 pre-tokenizer splits single digits", "[text][pre]") {
  const auto p = PreTokenizer::Qwen2;
  CHECK(split(p, "12345") == V{"1", "2", "3", "4", "5"});
  CHECK(split(p, "a1b22") == V{"a", "1", "b", "2", "2"});
  CHECK(split(p, "I'M") == V{"I", "'M"});
}

TEST_CASE("default pre-tokenizer is llama.cpp's regex chain", "[text][pre]") {
  const auto p = PreTokenizer::Default;
  CHECK(split(p, "don't stop") == V{"don", "'", "t", " stop"});
  CHECK(split(p, "price: $12345!") == V{"price", ":", " ", "$", "123", "45", "!"});
  CHECK(split(p, "a+b=c") == V{"a", "+", "b", "=", "c"});
  CHECK(split(p, "x 1234") == V{"x", " ", "123", "4"});
}

TEST_CASE("pre-tokenizers cover the text exactly", "[text][pre]") {
  const std::string text =
      "Mixed: caf\xC3\xA9, \xE6\x97\xA5\xE6\x9C\xAC 42\xC2\xB2  x\t\ty\r\n\n  \xF0\x9F\x98\x80!";
  for (const auto p : {PreTokenizer::Default, PreTokenizer::Gpt2, PreTokenizer::Llama3,
                       PreTokenizer::Qwen2}) {
    std::string joined;
    for (const auto& w : split(p, text)) {
      CHECK_FALSE(w.empty());
      joined += w;
    }
    CHECK(joined == text);
  }
}
