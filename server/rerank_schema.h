// The rerank route's wire formats: POST /v1/rerank (also /rerank,
// /v1/reranking), as llama-server, Jina and Cohere accept it (`query`,
// `documents` as strings or {"text": ...}, `top_n`, `return_documents`) and
// Hugging Face TEI's (`query`, `texts`, `return_text`: a bare array back).
// Parsing, the model input of a (query, document) pair, and the response:
// no HTTP here, so it is unit-tested directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/keep_alive.h"
#include "engine/text/tokenizer.h"
#include "server/openai_errors.h"

namespace tc::server {

// Documents per request at most.
inline constexpr size_t kMaxRerankDocuments = 1024;

struct RerankRequest {
  std::string model;  // as sent; empty when absent
  std::string query;
  std::vector<std::string> documents;
  std::optional<int64_t> top_n;   // keep the best this many (>= 1); all when absent
  bool return_documents = false;  // each result carries its document's text
  bool tei = false;               // TEI's form: `texts` in, a bare array of {index, score[, text]} out
  std::optional<config::KeepAlive> keep_alive;
};

struct RerankParse {
  std::optional<RerankRequest> request;
  std::optional<ApiError> error;  // a 400 naming the field
};

RerankParse parse_rerank(const nlohmann::json& body);

// The model input for one pair, as llama-server builds it. With the
// file's rerank template (`tokenizer.chat_template.rerank`, Qwen3-Reranker's
// prompt; empty: none): the template with every {query} and {document}
// replaced, encoded with special-token texts parsed and no BOS/EOS added.
// Without: BOS (if the vocab adds one), the query, EOS (if it adds one; SEP
// where it has no EOS), SEP (if it adds one), the document, EOS (if it adds
// one), the texts encoded without specials and without parsing
// special-token texts. BERT's: [CLS] query [SEP] document.
std::vector<text::TokenId> rerank_pair_tokens(const text::Tokenizer& tokenizer, const std::string& query,
                                              const std::string& document, const std::string& rerank_template = {});

// The response: scores[i] is document i's. Sorted best first, cut to
// top_n; {"model", "object": "list", "usage": {"prompt_tokens",
// "total_tokens"}, "results": [{"index", "relevance_score"[, "document":
// {"text"}]}]}, or TEI's [{"index", "score"[, "text"]}].
nlohmann::json rerank_response(const RerankRequest& request, const std::string& model,
                               const std::vector<float>& scores, int64_t prompt_tokens);

}  // namespace tc::server
