// Context shift over HTTP: /v1/completions with `context_shift: true` (or a
// server started with --context-shift) answers a max_tokens larger than the
// context, the same text as `thermocline generate --context-shift`; without
// it, a 400 (and generate stops at the full context, naming the flag). Ollama's /api/generate shifts by default (its `shift`), and
// `shift: false` keeps the context's bound. /metrics counts the shifts.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace {

constexpr int kCtx = 64;
constexpr int kTokens = 150;  // more than two contexts
constexpr char kPrompt[] = "Once upon a time there was";

std::filesystem::path tiny_model(const std::filesystem::path& dir) {
  return tc::test::make_test_model(dir, "tiny", "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024");
}

std::unique_ptr<tc::test::ServerProcess> tiny_server(const std::filesystem::path& dir, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--alias", "tiny", "--ctx-size", std::to_string(kCtx), "--parallel", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return std::make_unique<tc::test::ServerProcess>(tiny_model(dir), args, dir);
}

json completion(std::optional<bool> shift) {
  json body = {{"model", "tiny"}, {"prompt", kPrompt}, {"max_tokens", kTokens}, {"temperature", 0},
               {"ignore_eos", true}};
  if (shift) body["context_shift"] = *shift;
  return body;
}

}  // namespace

TEST_CASE("/v1/completions with context_shift generates past the context, as generate --context-shift does",
          "[integration][context_shift]") {
  const auto dir = tc::test::scratch_dir("context_shift_http");
  const auto server = tiny_server(dir, {});
  auto client = server->client();

  const auto refused = tc::test::post_json(client, "/v1/completions", completion(std::nullopt));
  CHECK(refused.status == 400);
  CHECK(refused.body["error"]["param"] == "max_tokens");

  const auto shifted = tc::test::post_json(client, "/v1/completions", completion(true));
  INFO(shifted.body.dump());
  REQUIRE(shifted.status == 200);
  CHECK(shifted.body["usage"]["completion_tokens"] == kTokens);
  CHECK(shifted.body["choices"][0]["finish_reason"] == "length");
  const std::string text = shifted.body["choices"][0]["text"].get<std::string>();

  // The command line's greedy run with the same shift writes the same text.
  const auto cli = tc::test::run_command(
      tc::test::shell_quote(tc::test::thermocline_binary().string()) + " generate -m " +
      tc::test::shell_quote((dir / "tiny.gguf").string()) + " -p " + tc::test::shell_quote(kPrompt) + " -n " +
      std::to_string(kTokens) + " -c " + std::to_string(kCtx) + " --temp 0 --ignore-eos --context-shift --keep 4");
  INFO(cli.output);
  REQUIRE(cli.exit_code == 0);
  CHECK_THAT(cli.output, Catch::Contains(std::string(kPrompt) + text));
  CHECK_THAT(cli.output, Catch::Contains("context shifts: "));
  // Without the flag generation stops at the full context and says how to go on.
  const auto stopped = tc::test::run_command(
      tc::test::shell_quote(tc::test::thermocline_binary().string()) + " generate -m " +
      tc::test::shell_quote((dir / "tiny.gguf").string()) + " -p " + tc::test::shell_quote(kPrompt) + " -n " +
      std::to_string(kTokens) + " -c " + std::to_string(kCtx) + " --temp 0 --ignore-eos");
  INFO(stopped.output);
  CHECK(stopped.exit_code == 0);
  CHECK_THAT(stopped.output, Catch::Contains("stop: context full"));
  CHECK_THAT(stopped.output, Catch::Contains("--context-shift to go on past it"));

  const auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK_THAT(metrics->body, !Catch::Contains("thermocline_context_shifts_total 0\n"));
  CHECK_THAT(metrics->body, Catch::Contains("thermocline_context_shifts_total "));
  CHECK(server->stop() == 0);
}

TEST_CASE("context shift: the server's default, and Ollama's shift on by default", "[integration][context_shift]") {
  const auto dir = tc::test::scratch_dir("context_shift_http_default");
  const auto server = tiny_server(dir, {"--context-shift"});
  auto client = server->client();
  const auto by_default = tc::test::post_json(client, "/v1/completions", completion(std::nullopt));
  INFO(by_default.body.dump());
  REQUIRE(by_default.status == 200);
  CHECK(by_default.body["usage"]["completion_tokens"] == kTokens);
  CHECK(tc::test::post_json(client, "/v1/completions", completion(false)).status == 400);

  json generate = {{"model", "tiny"}, {"prompt", kPrompt}, {"raw", true}, {"stream", false},
                   {"options", {{"temperature", 0}, {"num_predict", kTokens}}}};
  auto r = client.Post("/api/generate", generate.dump(), "application/json");
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  const json reply = json::parse(r->body);
  // Past what the context leaves (an end-of-generation token could end it sooner; this seed's does not).
  CHECK(reply["eval_count"].get<int64_t>() + reply["prompt_eval_count"].get<int64_t>() > kCtx);
  generate["shift"] = false;
  r = client.Post("/api/generate", generate.dump(), "application/json");
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(server->stop() == 0);
}
