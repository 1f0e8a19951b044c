// POST /v1/rerank over HTTP on a models folder holding a BERT cross-encoder
// (a reranker: rank pooling, a classification head) and a BERT embedding
// model: documents come back best first with the scores each gets alone,
// top_n and return_documents as asked, TEI's /rerank form, the scores the
// same whatever else is in the request, 400s for a model that is not a
// reranker, a pair past the context and bad fields, and /v1/models naming
// each one's capabilities.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;
using tc::test::post_json;
using tc::test::ServerProcess;

TEST_CASE("rerank over HTTP: a cross-encoder ranks documents and other models are refused",
          "[integration][rerank]") {
  const auto models = tc::test::scratch_dir("rerank_api_models");
  const std::string shape = "--arch bert --tokenizer bert --n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 "
                            "--n-head-kv 4 --n-ctx 96 ";
  tc::test::make_test_model(models, "reranker", shape + "--reranker --seed 41");
  tc::test::make_test_model(models, "minilm", shape + "--seed 42");
  tc::test::make_test_model(models, "qwen-reranker",
                            "--arch qwen3 --reranker --n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 "
                            "--n-vocab 1024 --seed 43");
  ServerProcess server({}, {"--models-dir", models.string(), "--parallel", "2"}, tc::test::scratch_dir("rerank_logs"));
  auto c = server.client();

  const std::string query = "What do giant pandas eat?";
  const std::vector<std::string> docs = {"Giant pandas eat bamboo, almost nothing else.", "The stock market fell.",
                                         "Red pandas are not giant pandas.", "hello"};
  // Each document's score alone.
  std::vector<double> alone;
  for (const auto& d : docs) {
    const auto r = post_json(c, "/v1/rerank", {{"model", "reranker"}, {"query", query}, {"documents", {d}}});
    INFO(r.raw);
    REQUIRE(r.status == 200);
    REQUIRE(r.body["results"].size() == 1);
    alone.push_back(r.body["results"][0]["relevance_score"].get<double>());
  }
  const auto all = post_json(c, "/v1/rerank", {{"model", "reranker"}, {"query", query}, {"documents", docs}});
  INFO(all.raw);
  REQUIRE(all.status == 200);
  CHECK(all.body["object"] == "list");
  CHECK(all.body["model"] == "reranker");
  CHECK(all.body["usage"]["prompt_tokens"].get<int>() > 20);
  const auto& results = all.body["results"];
  REQUIRE(results.size() == docs.size());
  std::vector<bool> seen(docs.size(), false);
  for (size_t k = 0; k < results.size(); ++k) {
    const auto i = results[k]["index"].get<size_t>();
    REQUIRE(i < docs.size());
    seen[i] = true;
    const double score = results[k]["relevance_score"].get<double>();
    CHECK(std::fabs(score - alone[i]) < 1e-5);  // batched or alone, the same pair gives the same score
    if (k > 0) CHECK(results[k - 1]["relevance_score"].get<double>() >= score);
    CHECK_FALSE(results[k].contains("document"));
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));

  // top_n, return_documents, and the /rerank path in TEI's form.
  const auto top = post_json(c, "/rerank", {{"model", "reranker"}, {"query", query}, {"documents", docs},
                                            {"top_n", 2}, {"return_documents", true}});
  REQUIRE(top.status == 200);
  REQUIRE(top.body["results"].size() == 2);
  CHECK(top.body["results"][0]["index"] == results[0]["index"]);
  CHECK(top.body["results"][0]["document"]["text"] == docs[results[0]["index"].get<size_t>()]);
  const auto tei = post_json(c, "/rerank", {{"model", "reranker"}, {"query", query}, {"texts", docs},
                                            {"return_text", true}});
  REQUIRE(tei.status == 200);
  REQUIRE(tei.body.is_array());
  CHECK(tei.body[0]["index"] == results[0]["index"]);
  CHECK(std::fabs(tei.body[0]["score"].get<double>() - results[0]["relevance_score"].get<double>()) < 1e-5);

  // An embedding model does not rank; a pair past the 96 learned positions; bad fields.
  const auto plain = post_json(c, "/v1/rerank", {{"model", "minilm"}, {"query", query}, {"documents", docs}});
  CHECK(plain.status == 400);
  CHECK(plain.raw.find("not a reranker") != std::string::npos);
  std::string longer;
  for (int i = 0; i < 120; ++i) longer += "bamboo ";
  const auto too_long =
      post_json(c, "/v1/rerank", {{"model", "reranker"}, {"query", query}, {"documents", {"short", longer}}});
  CHECK(too_long.status == 400);
  CHECK(too_long.raw.find("document 1") != std::string::npos);
  const auto bad = post_json(c, "/v1/rerank", {{"model", "reranker"}, {"documents", docs}});
  CHECK(bad.status == 400);
  CHECK(bad.body["error"]["param"] == "query");
  // Qwen3-Reranker's form: its rerank prompt, P(yes) as the score, the same alone or beside others.
  const auto qwen = post_json(c, "/v1/rerank", {{"model", "qwen-reranker"}, {"query", query}, {"documents", docs}});
  INFO(qwen.raw);
  REQUIRE(qwen.status == 200);
  REQUIRE(qwen.body["results"].size() == docs.size());
  for (const auto& res : qwen.body["results"]) {
    const double p = res["relevance_score"].get<double>();
    CHECK((p > 0.0 && p < 1.0));
    const auto one = post_json(c, "/v1/rerank", {{"model", "qwen-reranker"}, {"query", query},
                                                 {"documents", {docs[res["index"].get<size_t>()]}}});
    REQUIRE(one.status == 200);
    CHECK(std::fabs(one.body["results"][0]["relevance_score"].get<double>() - p) < 1e-5);
  }
  // /v1/models says what each serves (the web page keeps them out of its chat picker).
  const auto listed = c.Get("/v1/models");
  REQUIRE(listed);
  const json models_list = json::parse(listed->body);
  int n_checked = 0;
  for (const auto& m : models_list["data"]) {
    INFO(m.dump());
    if (m["id"] == "reranker") CHECK(m["capabilities"] == json::array({"embedding", "rerank"}));
    if (m["id"] == "minilm") CHECK(m["capabilities"] == json::array({"embedding"}));
    if (m["id"] == "qwen-reranker") CHECK(m["capabilities"] == json::array({"embedding", "rerank"}));
    n_checked += m["id"] == "reranker" || m["id"] == "minilm" || m["id"] == "qwen-reranker" ? 1 : 0;
  }
  CHECK(n_checked == 3);
  // The embedding model still embeds; the reranker embeds its first token's row.
  const auto embed = post_json(c, "/v1/embeddings", {{"model", "reranker"}, {"input", "hello"}});
  CHECK(embed.status == 200);
  CHECK(server.stop() == 0);
}
