// Shared checks of Ollama's `think` over /api/chat for a model whose replies
// carry a reasoning part (a <think> template, harmony's analysis channel):
// think true returns that part as message.thinking, unset leaves it in the
// content, and streamed thinking lines add up to it.
#pragma once

#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "tests/integration/server_fixture.h"

namespace tc::test {

// `reasoning`: the reply the model writes to `question` (greedy, 12 tokens)
// before any split.
inline void check_ollama_think(const ServerProcess& server, const std::string& model, const std::string& question,
                               const std::string& reasoning) {
  using nlohmann::json;
  httplib::Client c = server.client();
  const json ollama = {{"model", model},
                       {"messages", {{{"role", "user"}, {"content", question}}}},
                       {"stream", false},
                       {"options", {{"temperature", 0}, {"num_predict", 12}, {"repeat_penalty", 1.0}}}};
  json think = ollama;
  think["think"] = true;
  const auto thought = post_json(c, "/api/chat", think);
  INFO(thought.raw);
  REQUIRE(thought.status == 200);
  CHECK(thought.body["message"]["thinking"] == reasoning);
  CHECK(thought.body["message"]["content"] == "");
  const auto plain = post_json(c, "/api/chat", ollama);
  REQUIRE(plain.status == 200);
  CHECK(plain.body["message"]["content"] == reasoning);
  CHECK_FALSE(plain.body["message"].contains("thinking"));
  think["stream"] = true;
  const auto lines = c.Post("/api/chat", think.dump(), "application/json");
  REQUIRE(lines);
  REQUIRE(lines->status == 200);
  std::istringstream in(lines->body);
  std::string line, thinking;
  while (std::getline(in, line)) {
    const json j = json::parse(line);
    if (j.contains("message") && j["message"].contains("thinking")) thinking += j["message"]["thinking"].get<std::string>();
  }
  CHECK(thinking == reasoning);
}

}  // namespace tc::test
