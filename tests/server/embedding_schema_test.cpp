// The embedding routes' wire formats: OpenAI's and Ollama's request shapes
// (and every 400 naming its field), the vector shaping (dimensions, L2
// norm) and OpenAI's base64 encoding, decoded back here.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "server/embedding_schema.h"
#include "tests/test_util.h"

using nlohmann::json;
using tc::server::EmbeddingParse;

namespace {

std::string param_of(const EmbeddingParse& p) { return p.error ? p.error->param : std::string("(no error)"); }

// RFC 4648 decoding, written independently of the encoder under test.
std::vector<unsigned char> decode_base64(const std::string& s) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<unsigned char> out;
  int bits = 0, acc = 0;
  for (const char c : s) {
    if (c == '=') break;
    const int v = value(c);
    REQUIRE(v >= 0);
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<unsigned char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("embedding schema: OpenAI input shapes", "[server][embeddings]") {
  auto ok = tc::server::parse_openai_embedding(json{{"model", "m"}, {"input", "hello"}});
  REQUIRE(ok.request);
  CHECK(ok.request->model == "m");
  REQUIRE(ok.request->inputs.size() == 1);
  CHECK(std::get<std::string>(ok.request->inputs[0]) == "hello");
  CHECK(ok.request->normalize);
  CHECK_FALSE(ok.request->truncate);
  CHECK_FALSE(ok.request->base64);

  auto many = tc::server::parse_openai_embedding(
      json{{"input", json::array({"a", json::array({1, 2}), "b"})}, {"encoding_format", "base64"}, {"dimensions", 8}});
  REQUIRE(many.request);
  REQUIRE(many.request->inputs.size() == 3);
  CHECK(std::get<std::vector<int32_t>>(many.request->inputs[1]) == std::vector<int32_t>{1, 2});
  CHECK(many.request->base64);
  CHECK(many.request->dimensions == 8);

  auto ids = tc::server::parse_openai_embedding(json{{"input", json::array({5, 6, 7})}});
  REQUIRE(ids.request);
  REQUIRE(ids.request->inputs.size() == 1);
  CHECK(std::get<std::vector<int32_t>>(ids.request->inputs[0]).size() == 3);
}

TEST_CASE("embedding schema: OpenAI errors name their field", "[server][embeddings]") {
  const std::vector<std::pair<json, std::string>> cases = {
      {json{{"model", "m"}}, "input"},
      {json{{"input", ""}}, "input"},
      {json{{"input", json::array()}}, "input"},
      {json{{"input", json::array({"a", ""})}}, "input"},
      {json{{"input", json::array({json::array()})}}, "input"},
      {json{{"input", json::array({1, -2})}}, "input"},
      {json{{"input", json::array({1.5})}}, "input"},
      {json{{"input", json::array({json::object()})}}, "input"},
      {json{{"input", 3}}, "input"},
      {json{{"input", "x"}, {"encoding_format", "int8"}}, "encoding_format"},
      {json{{"input", "x"}, {"dimensions", 0}}, "dimensions"},
      {json{{"input", "x"}, {"dimensions", 2.5}}, "dimensions"},
      {json{{"input", "x"}, {"dimensions", "8"}}, "dimensions"},
      {json{{"input", "x"}, {"model", 3}}, "model"},
      {json{{"input", "x"}, {"user", 3}}, "user"},
  };
  for (const auto& [body, param] : cases) {
    INFO(body.dump());
    const auto p = tc::server::parse_openai_embedding(body);
    CHECK_FALSE(p.request);
    REQUIRE(p.error);
    CHECK(p.error->status == 400);
    CHECK(param_of(p) == param);
  }
  json big = {{"input", json::array()}};
  for (size_t i = 0; i <= tc::server::kMaxEmbeddingInputs; ++i) big["input"].push_back("x");
  CHECK(param_of(tc::server::parse_openai_embedding(big)) == "input");
  CHECK(tc::server::parse_openai_embedding(json::array()).error);
}

TEST_CASE("embedding schema: Ollama's two routes", "[server][embeddings]") {
  auto embed = tc::server::parse_ollama_embed(json{{"model", "m"}, {"input", json::array({"a", "b"})}, {"keep_alive", "5m"}});
  REQUIRE(embed.request);
  CHECK(embed.request->inputs.size() == 2);
  CHECK(embed.request->truncate);
  CHECK(embed.request->normalize);
  CHECK(embed.request->keep_alive.has_value());

  auto no_truncate = tc::server::parse_ollama_embed(json{{"model", "m"}, {"input", "a"}, {"truncate", false}});
  REQUIRE(no_truncate.request);
  CHECK_FALSE(no_truncate.request->truncate);

  // No input (or an empty one): the model is only loaded.
  for (const json& body : {json{{"model", "m"}}, json{{"model", "m"}, {"input", ""}},
                           json{{"model", "m"}, {"input", json::array()}}}) {
    auto load = tc::server::parse_ollama_embed(body);
    REQUIRE(load.request);
    CHECK(load.request->inputs.empty());
  }
  CHECK(param_of(tc::server::parse_ollama_embed(json{{"model", "m"}, {"input", json::array({1, 2})}})) == "input");
  CHECK(param_of(tc::server::parse_ollama_embed(json{{"model", "m"}, {"truncate", "yes"}})) == "truncate");
  CHECK(param_of(tc::server::parse_ollama_embed(json{{"model", "m"}, {"keep_alive", json::array()}})) == "keep_alive");
  CHECK(param_of(tc::server::parse_ollama_embed(json{{"model", "m"}, {"options", 3}})) == "options");

  auto legacy = tc::server::parse_ollama_embeddings(json{{"name", "m"}, {"prompt", "hi"}});
  REQUIRE(legacy.request);
  CHECK(legacy.request->model == "m");
  REQUIRE(legacy.request->inputs.size() == 1);
  CHECK_FALSE(legacy.request->normalize);
  CHECK(param_of(tc::server::parse_ollama_embeddings(json{{"model", "m"}, {"prompt", 1}})) == "prompt");
}

TEST_CASE("embedding schema: TEI's /embed", "[server][embeddings]") {
  auto tei = tc::server::parse_tei_embed(json{{"inputs", json::array({"a", "b"})}});
  REQUIRE(tei.request);
  CHECK(tei.request->inputs.size() == 2);
  CHECK(tei.request->normalize);
  CHECK_FALSE(tei.request->truncate);
  auto ids = tc::server::parse_tei_embed(json{{"inputs", json::array({1, 2, 3})}, {"normalize", false},
                                              {"truncate", true}, {"dimensions", 8}});
  REQUIRE(ids.request);
  REQUIRE(ids.request->inputs.size() == 1);
  CHECK(std::get<std::vector<int32_t>>(ids.request->inputs[0]) == std::vector<int32_t>{1, 2, 3});
  CHECK_FALSE(ids.request->normalize);
  CHECK(ids.request->truncate);
  CHECK(*ids.request->dimensions == 8);
  const auto empty = tc::server::parse_tei_embed(json{{"inputs", ""}});
  CHECK(param_of(empty) == "inputs");
  REQUIRE(empty.error);
  CHECK(empty.error->message.find("'inputs'") != std::string::npos);
  CHECK(param_of(tc::server::parse_tei_embed(json::object())) == "inputs");
  CHECK(param_of(tc::server::parse_tei_embed(json{{"inputs", "a"}, {"normalize", 1}})) == "normalize");
  CHECK(param_of(tc::server::parse_tei_embed(json{{"inputs", "a"}, {"truncate", "no"}})) == "truncate");
}

TEST_CASE("embedding schema: llama-server's /embedding", "[server][embeddings]") {
  auto content = tc::server::parse_llamacpp_embedding(json{{"content", json::array({"a", "b"})}});
  REQUIRE(content.request);
  CHECK(content.request->inputs.size() == 2);
  CHECK(content.request->normalize);
  auto raw = tc::server::parse_llamacpp_embedding(json{{"input", "a"}, {"embd_normalize", -1}});
  REQUIRE(raw.request);
  CHECK(raw.request->inputs.size() == 1);
  CHECK_FALSE(raw.request->normalize);
  CHECK(param_of(tc::server::parse_llamacpp_embedding(json::object())) == "content");
  const auto empty = tc::server::parse_llamacpp_embedding(json{{"content", ""}});
  CHECK(param_of(empty) == "content");
  REQUIRE(empty.error);
  CHECK(empty.error->message.find("'content'") != std::string::npos);
  CHECK(param_of(tc::server::parse_llamacpp_embedding(json{{"content", "a"}, {"embd_normalize", 1}})) ==
        "embd_normalize");
}

TEST_CASE("embedding schema: dimensions, normalisation and base64", "[server][embeddings]") {
  const auto v = tc::test::random_floats(48, 7, 3.0f);
  const auto cut = tc::server::shape_embedding(v, 16, true);
  REQUIRE(cut.size() == 16);
  double norm = 0, dot = 0, v_norm = 0;
  for (size_t i = 0; i < 16; ++i) {
    norm += static_cast<double>(cut[i]) * cut[i];
    dot += static_cast<double>(cut[i]) * v[i];
    v_norm += static_cast<double>(v[i]) * v[i];
  }
  CHECK(norm == Approx(1.0).epsilon(1e-6));
  CHECK(dot == Approx(std::sqrt(v_norm)).epsilon(1e-6));  // the same direction
  CHECK(tc::server::shape_embedding(v, std::nullopt, false) == v);
  CHECK(tc::server::shape_embedding(v, 100, false).size() == v.size());
  const std::vector<float> zero(4, 0.0f);
  CHECK(tc::server::shape_embedding(zero, std::nullopt, true) == zero);

  CHECK(tc::server::base64_floats(std::vector<float>{1.0f}) == "AACAPw==");
  for (size_t n : {0, 1, 2, 3, 7, 48}) {
    const std::vector<float> values(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
    const auto bytes = decode_base64(tc::server::base64_floats(values));
    REQUIRE(bytes.size() == n * 4);
    std::vector<float> back(n);
    if (n > 0) std::memcpy(back.data(), bytes.data(), bytes.size());
    CHECK(back == values);
  }
  const json body = tc::server::openai_embedding_response("m", {{1.0f, 2.0f}, {3.0f}}, false, 7);
  CHECK(body["object"] == "list");
  CHECK(body["model"] == "m");
  CHECK(body["data"][1]["index"] == 1);
  CHECK(body["data"][1]["object"] == "embedding");
  CHECK(body["data"][0]["embedding"] == json::array({1.0, 2.0}));
  CHECK(body["usage"]["prompt_tokens"] == 7);
  CHECK(body["usage"]["total_tokens"] == 7);
}
