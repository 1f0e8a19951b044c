// The reasoning split: whole replies, and the same replies cut into random
// pieces, which must give the same reasoning and content.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "server/reasoning_split.h"

using tc::server::ReasoningParts;
using tc::server::ReasoningStream;
using tc::server::split_reasoning;

namespace {

struct Case {
  const char* reply;
  bool opened_by_prompt;
  const char* reasoning;
  const char* content;
};

const Case kCases[] = {
    {"<think>\nplan the answer\n</think>\n\nThe answer is 4.", false, "\nplan the answer\n", "The answer is 4."},
    {"  \n<think>a</think>b", false, "a", "b"},
    {"<think></think>\n\nJust this.", false, "", "Just this."},           // Qwen3 with thinking off
    {"No reasoning here.", false, "", "No reasoning here."},
    {"Text, then <think>late</think> tags", false, "", "Text, then <think>late</think> tags"},
    {"<thinking>not the tag</thinking>", false, "", "<thinking>not the tag</thinking>"},
    {"<think>cut off by max_tokens", false, "cut off by max_tokens", ""},
    {"the prompt opened it</think>Answer", true, "the prompt opened it", "Answer"},
    {"still thinking", true, "still thinking", ""},
    {"<thi", false, "", "<thi"},
    {"<think>a < b, and </thin is not the end</think> ok", false, "a < b, and </thin is not the end", "ok"},
    {"", false, "", ""},
    {"   ", false, "", "   "},
    {"<think>x</think>   ", false, "x", ""},
    {"<think>emoji \xF0\x9F\x99\x82 inside</think>caf\xC3\xA9", false, "emoji \xF0\x9F\x99\x82 inside", "caf\xC3\xA9"},
};

}  // namespace

TEST_CASE("reasoning splits off a leading think block only", "[server][reasoning]") {
  for (const Case& c : kCases) {
    INFO(c.reply);
    const ReasoningParts p = split_reasoning(c.reply, c.opened_by_prompt);
    CHECK(p.reasoning == c.reasoning);
    CHECK(p.content == c.content);
  }
}

TEST_CASE("the streamed reasoning split equals the whole one however the reply is cut", "[server][reasoning]") {
  std::mt19937 rng(3);
  for (const Case& c : kCases) {
    const std::string reply = c.reply;
    for (int trial = 0; trial < 200; ++trial) {
      ReasoningStream stream(c.opened_by_prompt);
      ReasoningParts got;
      size_t at = 0;
      while (at < reply.size()) {
        const size_t n = std::uniform_int_distribution<size_t>(1, 4)(rng);
        const ReasoningParts p = stream.push(std::string_view(reply).substr(at, n));
        got.reasoning += p.reasoning;
        got.content += p.content;
        at += n;
      }
      const ReasoningParts rest = stream.finish();
      got.reasoning += rest.reasoning;
      got.content += rest.content;
      INFO(c.reply << " (trial " << trial << ")");
      REQUIRE(got.reasoning == c.reasoning);
      REQUIRE(got.content == c.content);
    }
  }
}

TEST_CASE("a prompt ending in an opened think block is told apart", "[server][reasoning]") {
  CHECK(tc::server::prompt_opens_reasoning("<|Assistant|><think>\n"));
  CHECK(tc::server::prompt_opens_reasoning("...<think>"));
  CHECK_FALSE(tc::server::prompt_opens_reasoning("<think>\n\n</think>\n\n"));  // Qwen3, thinking off
  CHECK_FALSE(tc::server::prompt_opens_reasoning("<|im_start|>assistant\n"));
  CHECK_FALSE(tc::server::prompt_opens_reasoning(""));
}
