// Pre-tokenizer splits on tricky strings. Expected values were worked out
// from the regexes' semantics as llama.cpp runs them (leftmost alternative,
// greedy runs, \s+(?!\S) leaving one space for the next word, a non-ASCII
// letter both upper and lower case); the GPT-2/Llama-3 ones agree with
// Python's `regex`, and tests/oracle/pre_tokenizer_oracle_test.cpp checks
// the matchers against libllama itself.
#include <catch2/catch.hpp>

#include <string>
#include <string_view>
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

TEST_CASE("pre-tokenizer names", "[text][pre][pre_tokenizer]") {
  CHECK(pre_tokenizer_from_name("default") == PreTokenizer::Default);
  CHECK(pre_tokenizer_from_name("") == PreTokenizer::Default);
  CHECK(pre_tokenizer_from_name("gpt2") == PreTokenizer::Gpt2);
  CHECK(pre_tokenizer_from_name("gpt-2") == PreTokenizer::Gpt2);
  CHECK(pre_tokenizer_from_name("olmo") == PreTokenizer::Gpt2);
  CHECK(pre_tokenizer_from_name("llama3") == PreTokenizer::Llama3);
  CHECK(pre_tokenizer_from_name("llama-bpe") == PreTokenizer::Llama3);
  CHECK(pre_tokenizer_from_name("pixtral") == PreTokenizer::Llama3);
  CHECK(pre_tokenizer_from_name("dbrx") == PreTokenizer::Dbrx);
  CHECK(pre_tokenizer_from_name("glm4") == PreTokenizer::ChatGlm4);
  CHECK(pre_tokenizer_from_name("qwen2") == PreTokenizer::Qwen2);
  CHECK(pre_tokenizer_from_name("stablelm2") == PreTokenizer::Qwen2);
  CHECK(pre_tokenizer_from_name("bailingmoe2") == PreTokenizer::Qwen2);
  CHECK(pre_tokenizer_from_name("tekken") == PreTokenizer::Tekken);
  CHECK(pre_tokenizer_from_name("gpt-4o") == PreTokenizer::Gpt4o);
  CHECK(pre_tokenizer_from_name("llama4") == PreTokenizer::Gpt4o);
  CHECK(pre_tokenizer_from_name("minimax-m2") == PreTokenizer::Gpt4o);
  CHECK(pre_tokenizer_from_name("falcon") == PreTokenizer::Falcon);
  CHECK(pre_tokenizer_from_name("refact") == PreTokenizer::Starcoder);
  CHECK(pre_tokenizer_from_name("smollm") == PreTokenizer::Starcoder);
  CHECK(pre_tokenizer_from_name("command-r") == PreTokenizer::Starcoder);
  CHECK(pre_tokenizer_from_name("deepseek-llm") == PreTokenizer::DeepseekLlm);
  CHECK(pre_tokenizer_from_name("deepseek-v3") == PreTokenizer::Deepseek3);
  CHECK(pre_tokenizer_from_name("deepseek-coder") == PreTokenizer::DeepseekCoder);
  CHECK(pre_tokenizer_from_name("poro-chat") == PreTokenizer::Bloom);
  CHECK(pre_tokenizer_from_name("kimi-k2") == PreTokenizer::KimiK2);
  CHECK_FALSE(pre_tokenizer_from_name("no-such-pre").has_value());
  CHECK_FALSE(pre_tokenizer_from_name("Tekken").has_value());  // names are case-sensitive
  CHECK(pre_tokenizer_from_name("gemma4") == PreTokenizer::Gemma4);
  CHECK(pre_tokenizer_from_name("granite-embed-multi-311m") == PreTokenizer::Gemma4);
  // Known to llama.cpp, but raw-UTF-8 BPE other than Gemma 4's: refused with a reason.
  for (const std::string name : {"sarvam-moe", "whitespace"}) {
    CHECK_FALSE(pre_tokenizer_from_name(name).has_value());
    CHECK_FALSE(pre_tokenizer_refusal(name).empty());
    CHECK(supported_pre_tokenizer_names().find("\"" + name + "\"") == std::string_view::npos);
  }
  CHECK(pre_tokenizer_refusal("tekken").empty());
  CHECK(pre_tokenizer_refusal("no-such-pre").empty());
  CHECK(supported_pre_tokenizer_names().find("\"tekken\"") != std::string_view::npos);
}

TEST_CASE("pre-tokenizer flags follow llama.cpp's per-name defaults", "[text][pre][pre_tokenizer]") {
  for (const auto p : {PreTokenizer::Llama3, PreTokenizer::Tekken, PreTokenizer::MiniCpm5, PreTokenizer::Youtu,
                       PreTokenizer::GraniteEmbMulti}) {
    CHECK(pre_tokenizer_ignores_merges(p));
  }
  for (const auto p : {PreTokenizer::Default, PreTokenizer::Gpt2, PreTokenizer::Dbrx, PreTokenizer::ChatGlm4,
                       PreTokenizer::Qwen2, PreTokenizer::Gpt4o, PreTokenizer::Chameleon}) {
    CHECK_FALSE(pre_tokenizer_ignores_merges(p));
  }
  for (const auto p : {PreTokenizer::Llama3, PreTokenizer::Tekken, PreTokenizer::Chameleon, PreTokenizer::Gemma4}) {
    CHECK(pre_tokenizer_default_add_bos(p));
  }
  CHECK_FALSE(pre_tokenizer_ignores_merges(PreTokenizer::Gemma4));
  for (const auto p : {PreTokenizer::Dbrx, PreTokenizer::Gpt4o, PreTokenizer::MiniCpm5, PreTokenizer::Qwen2}) {
    CHECK_FALSE(pre_tokenizer_default_add_bos(p));
  }
  CHECK_FALSE(pre_tokenizer_has_default_bos(PreTokenizer::ChatGlm4));
  CHECK(pre_tokenizer_has_default_bos(PreTokenizer::Llama3));
}

TEST_CASE("gpt2 pre-tokenizer", "[text][pre][pre_tokenizer]") {
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

TEST_CASE("llama3 pre-tokenizer", "[text][pre][pre_tokenizer]") {
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

TEST_CASE("qwen2 pre-tokenizer splits single digits", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Qwen2;
  CHECK(split(p, "12345") == V{"1", "2", "3", "4", "5"});
  CHECK(split(p, "a1b22") == V{"a", "1", "b", "2", "2"});
  CHECK(split(p, "I'M") == V{"I", "'M"});
}

TEST_CASE("default pre-tokenizer is llama.cpp's regex chain", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Default;
  CHECK(split(p, "don't stop") == V{"don", "'", "t", " stop"});
  CHECK(split(p, "price: $12345!") == V{"price", ":", " ", "$", "123", "45", "!"});
  CHECK(split(p, "a+b=c") == V{"a", "+", "b", "=", "c"});
  CHECK(split(p, "x 1234") == V{"x", " ", "123", "4"});
}

TEST_CASE("tekken pre-tokenizer splits words at case changes", "[text][pre][pre_tokenizer]") {
  // ASCII case decides; a non-ASCII letter counts as both cases and digits stand alone.
  const auto p = PreTokenizer::Tekken;
  CHECK(split(p, "HTTPServer camelCase") == V{"HTTPServer", " camel", "Case"});
  CHECK(split(p, "XMLHttpRequest") == V{"XMLHttp", "Request"});
  CHECK(split(p, "HELLO world") == V{"HELLO", " world"});
  CHECK(split(p, "don't I'M") == V{"don", "'t", " I", "'M"});
  CHECK(split(p, "12345") == V{"1", "2", "3", "4", "5"});
  CHECK(split(p, "Hello,World") == V{"Hello", ",World"});
  CHECK(split(p, "\xC3\x89" "COLE Stra\xC3\x9F" "e") == V{"\xC3\x89", "COLE", " Stra\xC3\x9F" "e"});
  CHECK(split(p, "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xA7\xE3\x81\x99") == V{"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xA7\xE3\x81\x99"});
  CHECK(split(p, "x /\n/y") == V{"x", " /\n/", "y"});
  CHECK(split(p, "a\n\n  b") == V{"a", "\n\n", " ", " b"});
  CHECK(split(p, "e\xCC\x81") == V{"e", "\xCC\x81"});
}

TEST_CASE("gpt-4o pre-tokenizer keeps contractions on the word", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Gpt4o;
  CHECK(split(p, "HTTPServer's camelCase") == V{"HTTPServer's", " camel", "Case"});
  CHECK(split(p, "I'M don't we'LL") == V{"I'M", " don't", " we'LL"});
  CHECK(split(p, "12345") == V{"123", "45"});
  CHECK(split(p, "x=1;\ty") == V{"x", "=", "1", ";", "\ty"});
  CHECK(split(p, "ABC123def") == V{"ABC", "123", "def"});
  CHECK(split(p, "Cafe\xCC\x81s") == V{"Cafe", "\xCC\x81s"});
  CHECK(split(p, "  trailing  ") == V{" ", " trailing", "  "});
}

TEST_CASE("granite-embed-multi counts marks as letters", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::GraniteEmbMulti;
  CHECK(split(p, "Cafe\xCC\x81s") == V{"Cafe\xCC\x81s"});
  CHECK(split(p, "HTTPServer") == V{"HTTPServer"});
}

TEST_CASE("tiny_aya groups digits from the right and ignores case", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::TinyAya;
  CHECK(split(p, "1234567") == V{"1", "234", "567"});
  CHECK(split(p, "HTTPServer camelCase") == V{"HTTPServer", " camelCase"});
  CHECK(split(p, "\xC3\x89" "COLE") == V{"\xC3\x89" "COLE"});
  CHECK(split(p, "a  12345") == V{"a", " ", " ", "12", "345"});
}

TEST_CASE("youtu splits script runs then single digits", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Youtu;
  CHECK(split(p, "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4\xE3\x84\xB1\xEF\xBC\x8C\xE3\x80\x82\xE4\xB8\xAD\xE6\x96\x87") == V{"\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4\xE3\x84\xB1", "\xEF\xBC\x8C\xE3\x80\x82", "\xE4\xB8\xAD\xE6\x96\x87"});
  CHECK(split(p, "ab12") == V{"ab", "1", "2"});
}

TEST_CASE("kimi-k2 splits Han runs from other letters", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::KimiK2;
  CHECK(split(p, "Hello\xE4\xB8\x96\xE7\x95\x8Cworld") == V{"Hello", "\xE4\xB8\x96\xE7\x95\x8C", "world"});
  CHECK(split(p, " \xE4\xB8\x96\xE7\x95\x8C") == V{" ", "\xE4\xB8\x96\xE7\x95\x8C"});
  CHECK(split(p, "don't HTTPServer") == V{"don't", " HTTPServer"});
  CHECK(split(p, "e\xCC\x81") == V{"e", "\xCC\x81"});
  CHECK(split(p, "12345") == V{"123", "45"});
}

TEST_CASE("deepseek-llm splits by its script classes", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::DeepseekLlm;
  CHECK(split(p, "Hello, world!\n") == V{"Hello", ",", " world", "!", "\n"});
  CHECK(split(p, "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xE3\x83\x86\xE3\x82\xB9\xE3\x83\x88") == V{"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", " ", "\xE3\x83\x86\xE3\x82\xB9\xE3\x83\x88"});
  CHECK(split(p, "a  ") == V{"a", "  "});
  CHECK(split(p, "x\xE3\x80\x80y") == V{"x", "\xE3\x80\x80y"});
  CHECK(split(p, "2024\xE5\xB9\xB4") == V{"2024", "\xE5\xB9\xB4"});
}

TEST_CASE("deepseek-coder splits letters, punctuation and single digits", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::DeepseekCoder;
  CHECK(split(p, "foo(bar)\n") == V{"foo", "(", "bar", ")", "\n"});
  CHECK(split(p, "x 123") == V{"x", " ", "1", "2", "3"});
  CHECK(split(p, "a+b") == V{"a", "+", "b"});
}

TEST_CASE("deepseek-v3 splits digit triples and CJK runs first", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Deepseek3;
  CHECK(split(p, "Hello World") == V{"Hello", " World"});
  CHECK(split(p, "(x) a.b") == V{"(x", ")", " a", ".b"});
  CHECK(split(p, "12345abc") == V{"123", "45", "abc"});
  CHECK(split(p, "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x83\x86\xE3\x82\xB9\xE3\x83\x88 ok") == V{"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x83\x86\xE3\x82\xB9\xE3\x83\x88", " ok"});
  CHECK(split(p, "\xC3\xA9!") == V{"\xC3\xA9", "!"});
}

TEST_CASE("afmoe groups digits from the right and splits Asian scripts", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Afmoe;
  CHECK(split(p, "abc1234") == V{"abc", "1", "234"});
  CHECK(split(p, "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E" "abc") == V{"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", "abc"});
}

TEST_CASE("falcon adds the backtick to the punctuation runs", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Falcon;
  CHECK(split(p, "x=`y`") == V{"x", "=`", "y", "`"});
  CHECK(split(p, "a 1234") == V{"a", " ", "123", "4"});
  CHECK(split(p, "don't") == V{"don", "'", "t"});
}

TEST_CASE("starcoder splits every digit before the GPT-2 regex", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Starcoder;
  CHECK(split(p, "x=12;") == V{"x", "=", "1", "2", ";"});
  CHECK(split(p, "abc 42 def") == V{"abc", " ", "4", "2", " def"});
}

TEST_CASE("chameleon isolates punctuation, digits and tab or space pairs", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Chameleon;
  CHECK(split(p, "<sentinel:12>hi") == V{"<", "sentinel", ":", "1", "2", ">", "hi"});
  CHECK(split(p, "IMGIMGABZ") == V{"IMGIMGABZ"});
  CHECK(split(p, "  x\ty") == V{"  ", "x", "\t", "y"});
  CHECK(split(p, "a    b") == V{"a", "    ", "b"});
  CHECK(split(p, "a   b") == V{"a", "  ", " b"});
  CHECK(split(p, "don't!") == V{"don", "'", "t", "!"});
}

TEST_CASE("bloom splits at its separators only", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Bloom;
  CHECK(split(p, "Hello, world!") == V{"Hello", ",", " world", "!"});
  CHECK(split(p, "a  b") == V{"a", " ", " b"});
  CHECK(split(p, "(x|y)") == V{"(", "x", "|", "y", ")"});
  CHECK(split(p, "a..b 12,5") == V{"a", "..", "b", " 12", ",", "5"});
  CHECK(split(p, "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA5\xA4\xE0\xA4\xB8") == V{"\xE0\xA4\xA8\xE0\xA4\xAE", "\xE0\xA5\xA4", "\xE0\xA4\xB8"});
}

TEST_CASE("viking splits digits after bloom's regex", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Viking;
  CHECK(split(p, "abc123 x") == V{"abc", "1", "2", "3", " x"});
}

TEST_CASE("superbpe groups digits by three from the right", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::SuperBpe;
  CHECK(split(p, "1234567") == V{"1", "234", "567"});
  CHECK(split(p, "abc 123456") == V{"abc ", "123", "456"});
  CHECK(split(p, "12\xC2\xB2" "345") == V{"12\xC2\xB2", "345"});
}

TEST_CASE("jais-2 cuts whitespace runs into powers of two", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Jais2;
  CHECK(split(p, "a          b") == V{"a", std::string(8, ' '), " ", " b"});
  CHECK(split(p, "a     ") == V{"a", "    ", " "});
  CHECK(split(p, "a \n b") == V{"a", " \n", " b"});
}

TEST_CASE("seed-coder keeps newlines out of punctuation words", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::SeedCoder;
  CHECK(split(p, "!!\n\nx") == V{"!!", "\n\n", "x"});
  CHECK(split(p, "12") == V{"1", "2"});
}

TEST_CASE("minicpm5 splits digit triples then whole digit runs", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::MiniCpm5;
  CHECK(split(p, "abc12345") == V{"abc", "123", "45"});
  CHECK(split(p, "x 1234567") == V{"x", " ", "123", "456", "7"});
}

TEST_CASE("exaone-moe runs words on across single spaces", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::ExaoneMoe;
  CHECK(split(p, "hello world  foo") == V{"hello world", " ", " foo"});
  CHECK(split(p, " the cat") == V{" the cat"});
  CHECK(split(p, "I'm a, b") == V{"I", "'m", " a", ",", " b"});
  CHECK(split(p, "x1") == V{"x", "1"});
}

TEST_CASE("laguna splits newline runs then applies qwen2", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Laguna;
  CHECK(split(p, "a\n\nb c") == V{"a", "\n\n", "b", " c"});
}

TEST_CASE("gemma4 splits newline runs only", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Gemma4;
  CHECK(split(p, "a\n\nb c,\r\n12\n") == V{"a", "\n\n", "b c,\r", "\n", "12", "\n"});
}

TEST_CASE("qwen35 keeps combining marks in words", "[text][pre][pre_tokenizer]") {
  const auto p = PreTokenizer::Qwen35;
  CHECK(split(p, "e\xCC\x81x") == V{"e\xCC\x81x"});
  CHECK(split(p, "12") == V{"1", "2"});
}

TEST_CASE("pre-tokenizers cover the text exactly", "[text][pre][pre_tokenizer]") {
  const std::string text =
      "Mixed: caf\xC3\xA9, \xE6\x97\xA5\xE6\x9C\xAC 42\xC2\xB2  x\t\ty\r\n\n  \xF0\x9F\x98\x80! HTTPServer's "
      "<sentinel:1> 1234567 \xED\x95\x9C\xEA\xB8\x80, e\xCC\x81\xE3\x80\x80" + std::string(20, ' ') + "end";
  for (int i = 0; i <= static_cast<int>(PreTokenizer::Gemma4); ++i) {
    const auto p = static_cast<PreTokenizer>(i);
    INFO("pre-tokenizer " << i);
    std::string joined;
    for (const auto& w : split(p, text)) {
      CHECK_FALSE(w.empty());
      joined += w;
    }
    CHECK(joined == text);
    CHECK(split(p, "").empty());
  }
}
