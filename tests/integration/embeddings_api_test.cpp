// The embedding routes over HTTP on a real `thermocline serve`: OpenAI's
// /v1/embeddings (float and base64, text and token ids, a batch larger than
// the engine's queue, dimensions) and Ollama's /api/embed and /api/embeddings,
// context limits and truncation, bad input as 400s naming the field, and
// the `pooling` option (cls pools the first token: BOS for every text); an
// encoder (EmbeddingGemma's gemma-embedding) embeds a text longer than the
// step budget whole and refuses completions.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;
using tc::test::post_json;
using tc::test::ServerProcess;

namespace {

std::filesystem::path test_model() {
  static const auto dir = tc::test::scratch_dir("embeddings_api");
  return tc::test::make_test_model(dir, "tiny",
                                   "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 17");
}

std::vector<float> vector_of(const json& v) { return v.get<std::vector<float>>(); }

double norm(const std::vector<float>& v) {
  double s = 0;
  for (const float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

std::vector<float> embed_one(httplib::Client& c, const json& input) {
  const auto r = post_json(c, "/v1/embeddings", {{"input", input}, {"encoding_format", "float"}});
  INFO(r.raw);
  REQUIRE(r.status == 200);
  REQUIRE(r.body["data"].size() == 1);
  return vector_of(r.body["data"][0]["embedding"]);
}

void check_400(httplib::Client& c, const std::string& path, const json& body, const std::string& needle) {
  const auto r = post_json(c, path, body);
  INFO(path << " " << body.dump() << " -> " << r.raw);
  CHECK(r.status == 400);
  CHECK(r.raw.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("embeddings over HTTP: OpenAI and Ollama routes", "[integration][embeddings]") {
  ServerProcess server(test_model(),
                       {"--alias", "tiny", "--ctx-size", "48", "--parallel", "2", "--queue-size", "2"},
                       tc::test::scratch_dir("embeddings_api_logs"));
  auto c = server.client();

  const std::vector<float> fox = embed_one(c, "The quick brown fox");
  REQUIRE(fox.size() == 64);
  CHECK(norm(fox) == Approx(1.0).epsilon(1e-5));

  // Token ids of the same text give the same vector.
  const auto tokens = post_json(c, "/tokenize", {{"content", "The quick brown fox"}, {"add_special", true}});
  REQUIRE(tokens.status == 200);
  CHECK(embed_one(c, tokens.body["tokens"]) == fox);

  // 40 inputs with a queue of 2: every one answered, in order.
  json many = json::array();
  for (int i = 0; i < 40; ++i) many.push_back(i % 10 == 3 ? std::string("The quick brown fox") : "text " + std::to_string(i));
  const auto batch = post_json(c, "/v1/embeddings", {{"model", "tiny"}, {"input", many}});
  INFO(batch.raw.substr(0, 400));
  REQUIRE(batch.status == 200);
  REQUIRE(batch.body["data"].size() == 40);
  for (int i = 0; i < 40; ++i) {
    CHECK(batch.body["data"][static_cast<size_t>(i)]["index"] == i);
    if (i % 10 == 3) CHECK(vector_of(batch.body["data"][static_cast<size_t>(i)]["embedding"]) == fox);
  }
  CHECK(batch.body["usage"]["prompt_tokens"].get<int64_t>() > 40);
  CHECK(batch.body["model"] == "tiny");

  // base64: the f32 bytes of the float answer.
  const auto b64 = post_json(c, "/v1/embeddings", {{"input", "The quick brown fox"}, {"encoding_format", "base64"}});
  REQUIRE(b64.status == 200);
  CHECK(b64.body["data"][0]["embedding"].is_string());
  CHECK(b64.body["data"][0]["embedding"].get<std::string>().size() == (64 * 4 + 2) / 3 * 4);

  // dimensions: the first values, normalised again.
  const auto cut = post_json(c, "/v1/embeddings", {{"input", "The quick brown fox"}, {"dimensions", 8}, {"encoding_format", "float"}});
  REQUIRE(cut.status == 200);
  const auto eight = vector_of(cut.body["data"][0]["embedding"]);
  REQUIRE(eight.size() == 8);
  CHECK(norm(eight) == Approx(1.0).epsilon(1e-5));
  CHECK(eight[0] / fox[0] == Approx(eight[7] / fox[7]).epsilon(1e-4));

  // Ollama's routes: the same vector; /api/embeddings unnormalised.
  const auto embed = post_json(c, "/api/embed", {{"model", "tiny"}, {"input", json::array({"The quick brown fox"})}});
  REQUIRE(embed.status == 200);
  CHECK(vector_of(embed.body["embeddings"][0]) == fox);
  CHECK(embed.body["prompt_eval_count"].get<int64_t>() > 0);
  const auto legacy = post_json(c, "/api/embeddings", {{"model", "tiny"}, {"prompt", "The quick brown fox"}});
  REQUIRE(legacy.status == 200);
  const auto raw = vector_of(legacy.body["embedding"]);
  REQUIRE(raw.size() == 64);
  CHECK(raw[5] / norm(raw) == Approx(fox[5]).margin(1e-6));

  // The context (48 tokens): a 400 on OpenAI's route, cut on Ollama's unless truncate is false.
  std::string long_text;
  for (int i = 0; i < 80; ++i) long_text += " word" + std::to_string(i);
  check_400(c, "/v1/embeddings", {{"input", long_text}}, "context_length_exceeded");
  const auto truncated = post_json(c, "/api/embed", {{"model", "tiny"}, {"input", long_text}});
  CHECK(truncated.status == 200);
  CHECK(truncated.body["prompt_eval_count"] == 48);
  check_400(c, "/api/embed", {{"model", "tiny"}, {"input", long_text}, {"truncate", false}}, "context");

  // Bad input: 400s naming the field; unknown models 404.
  check_400(c, "/v1/embeddings", {{"input", ""}}, "input");
  check_400(c, "/v1/embeddings", {{"input", json::array({1, 5000})}}, "out of range");
  check_400(c, "/v1/embeddings", {{"input", "x"}, {"dimensions", 65}}, "dimensions");
  check_400(c, "/v1/embeddings", {{"input", "x"}, {"encoding_format", "hex"}}, "encoding_format");
  check_400(c, "/api/embed", {{"input", "x"}}, "model");
  CHECK(post_json(c, "/v1/embeddings", {{"model", "nope"}, {"input", "x"}}).status == 404);

  // Generation still works beside (and after) embeddings.
  const auto gen = post_json(c, "/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 4}});
  CHECK(gen.status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("embeddings over HTTP: --pooling cls pools the first token", "[integration][embeddings]") {
  ServerProcess server(test_model(), {"--pooling", "cls"}, tc::test::scratch_dir("embeddings_api_logs"));
  auto c = server.client();
  // Every text starts with BOS and attention is causal: one vector for all.
  CHECK(embed_one(c, "The quick brown fox") == embed_one(c, "something else entirely"));
  CHECK(server.stop() == 0);

  ServerProcess last(test_model(), {"--pooling", "last"}, tc::test::scratch_dir("embeddings_api_logs"));
  auto c2 = last.client();
  CHECK(embed_one(c2, "The quick brown fox") != embed_one(c2, "something else entirely"));
  CHECK(last.stop() == 0);
}

TEST_CASE("embeddings over HTTP: an encoder embeds whole texts and refuses completions", "[integration][embeddings]") {
  const auto dir = tc::test::scratch_dir("embeddings_api_encoder");
  const auto model = tc::test::make_test_model(dir, "encoder",
                                               "--arch gemma-embedding --n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 "
                                               "--n-head-kv 2 --sliding-window 8 --n-vocab 1024 --seed 19");
  // A step budget of 8 tokens: the encoder's texts, longer, still go in one step.
  ServerProcess server(model, {"--batch-size", "8"}, tc::test::scratch_dir("embeddings_api_logs"));
  auto c = server.client();
  const std::string text = "Every token of an encoder's input sees every other, the ones after it too.";
  const auto a = embed_one(c, text);
  CHECK(std::fabs(norm(a) - 1.0) < 1e-4);
  CHECK(embed_one(c, text) == a);  // nothing reused from the cache between requests
  const auto other = embed_one(c, "A different text entirely, of some length too.");
  CHECK(other != a);
  check_400(c, "/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 4}}, "encoder");
  check_400(c, "/v1/chat/completions",
            {{"messages", json::array({{{"role", "user"}, {"content", "Hello"}}})}, {"max_tokens", 4}}, "encoder");
  CHECK(server.stop() == 0);
}

TEST_CASE("embeddings over HTTP: a BERT encoder (WordPiece, learned positions) embeds what its tokenizer normalizes",
          "[integration][embeddings]") {
  const auto dir = tc::test::scratch_dir("embeddings_api_bert");
  const auto model = tc::test::make_test_model(dir, "minilm",
                                               "--arch bert --tokenizer bert --n-embd 64 --n-layer 2 --n-ff 128 "
                                               "--n-head 4 --n-head-kv 4 --n-ctx 128 --seed 23");
  ServerProcess server(model, {"--batch-size", "8"}, tc::test::scratch_dir("embeddings_api_logs"));
  auto c = server.client();
  const auto a = embed_one(c, "Hello World! A café in Zürich.");
  CHECK(std::fabs(norm(a) - 1.0) < 1e-4);
  // The uncased normalizer lowercases and strips accents: these are the same ids.
  CHECK(embed_one(c, "hello world! a cafe in zurich.") == a);
  CHECK(embed_one(c, "Hello World! A tea room in Zürich.") != a);
  const auto ollama = post_json(c, "/api/embed", {{"model", "minilm"}, {"input", "Hello World! A café in Zürich."}});
  REQUIRE(ollama.status == 200);
  CHECK(vector_of(ollama.body["embeddings"][0]) == a);
  // Hugging Face TEI's /embed: a bare array of vectors, normalised unless asked not to.
  const auto tei = post_json(c, "/embed", {{"inputs", {"Hello World! A café in Zürich.", "hello"}}});
  REQUIRE(tei.status == 200);
  REQUIRE(tei.body.is_array());
  REQUIRE(tei.body.size() == 2);
  CHECK(vector_of(tei.body[0]) == a);
  const auto raw = post_json(c, "/embed", {{"inputs", "Hello World! A café in Zürich."}, {"normalize", false}});
  REQUIRE(raw.status == 200);
  CHECK(std::fabs(norm(vector_of(raw.body[0])) - 1.0) > 1e-3);
  check_400(c, "/embed", {{"inputs", json::array()}}, "inputs");
  // llama-server's legacy /embedding: each input's vector as a list of one.
  const auto legacy = post_json(c, "/embedding", {{"content", "Hello World! A café in Zürich."}});
  REQUIRE(legacy.status == 200);
  REQUIRE(legacy.body.is_array());
  CHECK(legacy.body[0]["index"] == 0);
  CHECK(vector_of(legacy.body[0]["embedding"][0]) == a);
  // Past the 128 learned positions: a 400 naming the context, not a crash.
  std::string longer;
  for (int i = 0; i < 200; ++i) longer += "word ";
  check_400(c, "/v1/embeddings", {{"input", longer}}, "context");
  check_400(c, "/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 4}}, "encoder");
  CHECK(server.stop() == 0);
}
