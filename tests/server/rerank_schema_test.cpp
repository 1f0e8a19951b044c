// The rerank route's wire formats: llama-server's / Jina's / Cohere's request
// (documents as strings or {"text"}) and TEI's (texts), every 400 naming
// its field, the pair's model input as llama-server builds it, and the
// response sorted best first and cut to top_n.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/text/tokenizer.h"
#include "engine/text/vocab.h"
#include "server/rerank_schema.h"

using nlohmann::json;
using tc::server::parse_rerank;

namespace {

std::string param_of(const tc::server::RerankParse& p) { return p.error ? p.error->param : std::string("(no error)"); }

// A WordPiece vocab: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, then word pieces.
tc::text::Vocab wpm_vocab() {
  using tc::text::TokenType;
  tc::text::Vocab v;
  v.kind = tc::text::TokenizerKind::Wpm;
  v.pad_id = 0;
  v.unk_id = 1;
  v.bos_id = 2;
  v.sep_id = 3;
  v.add_bos = true;
  v.add_sep = true;
  v.add_space_prefix = false;
  v.normalizer_lowercase = true;
  v.normalizer_strip_accents = true;
  for (const char* s : {"[PAD]", "[UNK]", "[CLS]", "[SEP]"}) {
    v.tokens.emplace_back(s);
    v.types.push_back(TokenType::Control);
  }
  const std::string sp = "\xE2\x96\x81";  // U+2581: a word's first piece
  for (const std::string& s :
       {sp + "what", sp + "is", sp + "a", sp + "panda", sp + "bear", sp + "?", std::string("s")}) {
    v.tokens.push_back(s);
    v.types.push_back(TokenType::Normal);
  }
  return v;
}

}  // namespace

TEST_CASE("rerank requests: documents as strings or objects and TEI's texts", "[server][rerank]") {
  const auto p = parse_rerank({{"model", "r"},
                               {"query", "q"},
                               {"documents", json::array({"a", {{"text", "b"}}})},
                               {"top_n", 1},
                               {"return_documents", true}});
  REQUIRE_FALSE(p.error);
  CHECK(p.request->model == "r");
  CHECK(p.request->query == "q");
  CHECK(p.request->documents == std::vector<std::string>{"a", "b"});
  CHECK(*p.request->top_n == 1);
  CHECK(p.request->return_documents);
  CHECK_FALSE(p.request->tei);
  const auto tei = parse_rerank({{"query", "q"}, {"texts", {"a", "b"}}, {"return_text", true}});
  REQUIRE_FALSE(tei.error);
  CHECK(tei.request->tei);
  CHECK(tei.request->return_documents);
  CHECK_FALSE(tei.request->top_n);
}

TEST_CASE("rerank requests: every bad field is a 400 naming it", "[server][rerank]") {
  CHECK(param_of(parse_rerank({{"documents", {"a"}}})) == "query");
  CHECK(param_of(parse_rerank({{"query", 3}, {"documents", {"a"}}})) == "query");
  CHECK(param_of(parse_rerank({{"query", "q"}})) == "documents");
  CHECK(param_of(parse_rerank({{"query", "q"}, {"documents", json::array()}})) == "documents");
  CHECK(param_of(parse_rerank({{"query", "q"}, {"documents", "a"}})) == "documents");
  CHECK(param_of(parse_rerank({{"query", "q"}, {"documents", {1}}})) == "documents");
  CHECK(param_of(parse_rerank({{"query", "q"}, {"documents", {{{"text", 2}}}}})) == "documents");
  CHECK(param_of(parse_rerank({{"query", "q"}, {"documents", {"a"}}, {"texts", {"a"}}})) == "documents");
  CHECK(param_of(parse_rerank({{"query", "q"}, {"documents", {"a"}}, {"top_n", 0}})) == "top_n");
  CHECK(param_of(parse_rerank({{"query", "q"}, {"documents", {"a"}}, {"top_n", 1.5}})) == "top_n");
  CHECK(param_of(parse_rerank({{"query", "q"}, {"documents", {"a"}}, {"return_documents", "yes"}})) ==
        "return_documents");
  CHECK(param_of(parse_rerank({{"query", "q"}, {"documents", {"a"}}, {"model", 7}})) == "model");
  CHECK(param_of(parse_rerank({{"query", "q"}, {"documents", {"a"}}, {"keep_alive", true}})) == "keep_alive");
  CHECK(parse_rerank(json::array()).error);
  json many = json::array();
  for (size_t i = 0; i <= tc::server::kMaxRerankDocuments; ++i) many.push_back("d");
  CHECK(param_of(parse_rerank({{"query", "q"}, {"documents", many}})) == "documents");
}

TEST_CASE("rerank pairs: [CLS] query [SEP] document, as llama-server builds them", "[server][rerank]") {
  const auto tokenizer = tc::text::Tokenizer::create(wpm_vocab());
  // "what is a panda?" then "pandas": no trailing [SEP] (the vocab adds no EOS).
  CHECK(tc::server::rerank_pair_tokens(*tokenizer, "What is a panda?", "Pandas") ==
        std::vector<tc::text::TokenId>{2, 4, 5, 6, 7, 9, 3, 7, 10});
  // Special-token texts are plain text here: [SEP] inside a document is not the separator.
  const auto ids = tc::server::rerank_pair_tokens(*tokenizer, "a", "[SEP]");
  CHECK(std::count(ids.begin(), ids.end(), 3) == 1);
}

TEST_CASE("rerank pairs: a file's rerank template takes the query and the document", "[server][rerank]") {
  const auto tokenizer = tc::text::Tokenizer::create(wpm_vocab());
  // Special-token texts in the template are parsed; nothing is added around it.
  CHECK(tc::server::rerank_pair_tokens(*tokenizer, "what is", "a panda", "[CLS] {query} [SEP] {document} ?") ==
        std::vector<tc::text::TokenId>{2, 4, 5, 3, 6, 7, 9});
  // Every {query} first, then every {document} (a query naming {document} is filled too, as llama.cpp does).
  CHECK(tc::server::rerank_pair_tokens(*tokenizer, "{document}", "panda", "{query} {query}") ==
        std::vector<tc::text::TokenId>{7, 7});
}

TEST_CASE("rerank responses: best first, cut to top_n, documents when asked", "[server][rerank]") {
  auto p = parse_rerank({{"query", "q"}, {"documents", {"a", "b", "c"}}, {"top_n", 2}, {"return_documents", true}});
  REQUIRE_FALSE(p.error);
  const json r = tc::server::rerank_response(*p.request, "m", {0.5f, -1.0f, 2.0f}, 12);
  CHECK(r["model"] == "m");
  CHECK(r["object"] == "list");
  CHECK(r["usage"]["prompt_tokens"] == 12);
  REQUIRE(r["results"].size() == 2);
  CHECK(r["results"][0]["index"] == 2);
  CHECK(r["results"][0]["relevance_score"].get<double>() == 2.0);
  CHECK(r["results"][0]["document"]["text"] == "c");
  CHECK(r["results"][1]["index"] == 0);
  auto tei = parse_rerank({{"query", "q"}, {"texts", {"a", "b"}}});
  REQUIRE_FALSE(tei.error);
  const json t = tc::server::rerank_response(*tei.request, "m", {-3.0f, 1.0f}, 5);
  REQUIRE(t.is_array());
  CHECK(t[0]["index"] == 1);
  CHECK(t[0]["score"].get<double>() == 1.0);
  CHECK_FALSE(t[0].contains("text"));
}
