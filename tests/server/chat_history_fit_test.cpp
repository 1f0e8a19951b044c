// chat_history_fit.h's pure parts: where a kept history may start (never
// at a tool result whose call would be dropped) and which messages it keeps
// (the system messages before it, everything after); Ollama's truncate field, and
// its shift and num_keep (context shift) as the OpenAI body carries them.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "server/chat_history_fit.h"
#include "server/ollama_schema.h"

using nlohmann::json;
using tc::server::kept_messages;
using tc::server::tool_block_start;

namespace {

json message(const char* role, const char* content) { return {{"role", role}, {"content", content}}; }

json history() {
  json call = message("assistant", "");
  call["tool_calls"] = json::array({{{"id", "c1"}, {"type", "function"},
                                     {"function", {{"name", "f"}, {"arguments", json::object()}}}}});
  return json::array({message("system", "be brief"),   // 0
                      message("user", "one"),          // 1
                      message("assistant", "two"),     // 2
                      message("system", "later rule"), // 3
                      message("user", "call f"),       // 4
                      call,                            // 5
                      message("tool", "r1"),           // 6
                      message("tool", "r2"),           // 7
                      message("user", "and now?")});   // 8
}

}  // namespace

TEST_CASE("a kept history starts at the tool call its first tool result answers", "[server][ollama]") {
  const json h = history();
  CHECK(tool_block_start(h, 0) == 0);
  CHECK(tool_block_start(h, 4) == 4);
  CHECK(tool_block_start(h, 5) == 5);
  CHECK(tool_block_start(h, 6) == 5);  // results 6 and 7 answer the call in 5
  CHECK(tool_block_start(h, 7) == 5);
  CHECK(tool_block_start(h, 8) == 8);
  // A tool result with no assistant call before it stays where it is.
  const json orphan = json::array({message("user", "x"), message("tool", "r"), message("user", "y")});
  CHECK(tool_block_start(orphan, 1) == 1);
  const json leading = json::array({message("tool", "r"), message("user", "y")});
  CHECK(tool_block_start(leading, 0) == 0);
}

TEST_CASE("a kept history keeps the system messages it drops past", "[server][ollama]") {
  const json h = history();
  CHECK(kept_messages(h, 0) == h);
  const json from5 = kept_messages(h, 5);
  REQUIRE(from5.size() == 6);
  CHECK(from5[0] == h[0]);
  CHECK(from5[1] == h[3]);
  for (size_t i = 2; i < from5.size(); ++i) CHECK(from5[i] == h[i + 3]);
  const json last = kept_messages(h, 8);
  REQUIRE(last.size() == 3);
  CHECK(last[2] == h[8]);
}

TEST_CASE("/api/chat's truncate is on unless the request turns it off, and must be a boolean", "[server][ollama]") {
  const json messages = json::array({message("user", "Hi")});
  CHECK(tc::server::translate_ollama_chat(json{{"model", "m"}, {"messages", messages}}).truncate);
  const auto off = tc::server::translate_ollama_chat(json{{"model", "m"}, {"messages", messages}, {"truncate", false}});
  REQUIRE_FALSE(off.error);
  CHECK_FALSE(off.truncate);
  const auto bad = tc::server::translate_ollama_chat(json{{"model", "m"}, {"messages", messages}, {"truncate", "yes"}});
  REQUIRE(bad.error);
  CHECK(bad.error->param == "truncate");
}

TEST_CASE("Ollama's shift and num_keep become context_shift and n_keep, and num_predict -2 never shifts",
          "[server][ollama][context_shift]") {
  const json messages = json::array({{{"role", "user"}, {"content", "hi"}}});
  const json base = {{"model", "m"}, {"messages", messages}};
  const auto plain = tc::server::translate_ollama_chat(base);
  CHECK(plain.shift);  // Ollama's default, applied where the model allows it
  CHECK_FALSE(plain.openai.contains("context_shift"));
  json off = base;
  off["shift"] = false;
  const auto no_shift = tc::server::translate_ollama_chat(off);
  CHECK_FALSE(no_shift.shift);
  CHECK(no_shift.openai["context_shift"] == false);
  json on = base;
  on["shift"] = true;
  CHECK(tc::server::translate_ollama_chat(on).openai["context_shift"] == true);
  json keep = base;
  keep["options"] = {{"num_keep", 24}};
  CHECK(tc::server::translate_ollama_chat(keep).openai["n_keep"] == 24);
  json fill = base;
  fill["options"] = {{"num_predict", -2}};
  const auto fills = tc::server::translate_ollama_generate(json{{"model", "m"}, {"prompt", "hi"}, {"options", {{"num_predict", -2}}}});
  CHECK_FALSE(fills.shift);
  CHECK(fills.openai["context_shift"] == false);
  CHECK_FALSE(tc::server::translate_ollama_chat(fill).shift);
  json bad = base;
  bad["shift"] = "yes";
  REQUIRE(tc::server::translate_ollama_chat(bad).error);
  CHECK(tc::server::translate_ollama_chat(bad).error->param == "shift");
  json bad_keep = base;
  bad_keep["options"] = {{"num_keep", -3}};
  REQUIRE(tc::server::translate_ollama_chat(bad_keep).error);
  CHECK(tc::server::translate_ollama_chat(bad_keep).error->param == "options.num_keep");
}

TEST_CASE("a kept history keeps the images of the messages it keeps", "[server][ollama][images]") {
  tc::server::ChatRequest r;
  r.messages = json::array({message("system", "rules <__media__>"),      // image a
                            message("user", "<__media__>\n<__media__>\nhi"),  // b, c
                            message("assistant", "ok"),
                            message("user", "and <__media__>?")});       // d
  r.images = {"a", "b", "c", "d"};
  CHECK(tc::server::kept_images(r, 0) == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(tc::server::kept_images(r, 2) == std::vector<std::string>{"a", "d"});
  CHECK(tc::server::kept_images(r, 3) == std::vector<std::string>{"a", "d"});
}
