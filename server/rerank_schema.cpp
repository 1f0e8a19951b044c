// The rerank route's wire formats (see rerank_schema.h).
#include "server/rerank_schema.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "server/field_error.h"
#include "server/ollama_schema.h"

namespace tc::server {
namespace {

using nlohmann::json;

const json* field(const json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

bool read_bool(const json& body, const char* key, bool fallback) {
  const json* v = field(body, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) fail_field(std::string("'") + key + "' must be a boolean", key);
  return v->get<bool>();
}

// `documents` (or TEI's `texts`): strings, or objects with a string `text`.
std::vector<std::string> read_documents(const json& list, const char* key) {
  if (!list.is_array()) fail_field(std::string("'") + key + "' must be an array of strings", key);
  if (list.empty()) fail_field(std::string("'") + key + "' must not be empty", key);
  if (list.size() > kMaxRerankDocuments) {
    fail_field(std::string("'") + key + "' holds " + std::to_string(list.size()) + " documents; at most " +
                   std::to_string(kMaxRerankDocuments) + " per request",
               key);
  }
  std::vector<std::string> out;
  for (const auto& d : list) {
    if (d.is_string()) {
      out.push_back(d.get<std::string>());
    } else if (d.is_object() && d.contains("text") && d["text"].is_string()) {
      out.push_back(d["text"].get<std::string>());
    } else {
      fail_field(std::string("'") + key + "' must hold strings (or objects with a string 'text')", key);
    }
  }
  return out;
}

void append(std::vector<text::TokenId>& to, const std::vector<text::TokenId>& ids) {
  to.insert(to.end(), ids.begin(), ids.end());
}

}  // namespace

RerankParse parse_rerank(const json& body) {
  return translated<RerankParse>([&] {
    if (!body.is_object()) fail_field("request body must be a JSON object", "");
    RerankRequest r;
    if (const json* m = field(body, "model")) {
      if (!m->is_string()) fail_field("'model' must be a string", "model");
      r.model = m->get<std::string>();
    }
    const json* query = field(body, "query");
    if (query == nullptr) fail_field("'query' is required", "query");
    if (!query->is_string()) fail_field("'query' must be a string", "query");
    r.query = query->get<std::string>();
    const json* documents = field(body, "documents");
    const json* texts = field(body, "texts");
    if (documents != nullptr && texts != nullptr) fail_field("give 'documents' or 'texts', not both", "documents");
    if (documents == nullptr && texts == nullptr) fail_field("'documents' is required", "documents");
    r.tei = texts != nullptr;
    r.documents = read_documents(r.tei ? *texts : *documents, r.tei ? "texts" : "documents");
    if (const json* n = field(body, "top_n")) {
      if (!n->is_number_integer() || n->get<int64_t>() < 1) fail_field("'top_n' must be a positive integer", "top_n");
      r.top_n = n->get<int64_t>();
    }
    r.return_documents = read_bool(body, r.tei ? "return_text" : "return_documents", false);
    if (auto err = parse_keep_alive_field(body, r.keep_alive)) throw BadField{*err};
    RerankParse out;
    out.request = std::move(r);
    return out;
  });
}

std::vector<text::TokenId> rerank_pair_tokens(const text::Tokenizer& tokenizer, const std::string& query,
                                              const std::string& document, const std::string& rerank_template) {
  if (!rerank_template.empty()) {
    // Every {query}, then every {document} (text already put in is not searched again), as llama.cpp does.
    std::string prompt = rerank_template;
    for (const auto& [key, value] : {std::pair<std::string, const std::string*>{"{query}", &query},
                                     std::pair<std::string, const std::string*>{"{document}", &document}}) {
      for (size_t at = prompt.find(key); at != std::string::npos; at = prompt.find(key, at + value->size())) {
        prompt.replace(at, key.size(), *value);
      }
    }
    text::EncodeOptions o;
    o.add_special = false;
    o.parse_special = true;
    return tokenizer.encode(prompt, o);
  }
  const text::Vocab& v = tokenizer.vocab();
  text::EncodeOptions plain;
  plain.add_special = false;
  const text::TokenId eos = v.eos_id >= 0 ? v.eos_id : v.sep_id;
  std::vector<text::TokenId> out;
  if (v.add_bos && v.bos_id >= 0) out.push_back(v.bos_id);
  append(out, tokenizer.encode(query, plain));
  if (v.add_eos && eos >= 0) out.push_back(eos);
  if (v.add_sep && v.sep_id >= 0) out.push_back(v.sep_id);
  append(out, tokenizer.encode(document, plain));
  if (v.add_eos && eos >= 0) out.push_back(eos);
  return out;
}

json rerank_response(const RerankRequest& request, const std::string& model, const std::vector<float>& scores,
                     int64_t prompt_tokens) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (request.top_n && static_cast<size_t>(*request.top_n) < order.size()) {
    order.resize(static_cast<size_t>(*request.top_n));
  }
  json results = json::array();
  for (const size_t i : order) {
    json r = {{"index", i}, {request.tei ? "score" : "relevance_score", scores[i]}};
    if (request.return_documents) {
      if (request.tei) {
        r["text"] = request.documents[i];
      } else {
        r["document"] = {{"text", request.documents[i]}};
      }
    }
    results.push_back(std::move(r));
  }
  if (request.tei) return results;
  return {{"model", model},
          {"object", "list"},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}},
          {"results", std::move(results)}};
}

}  // namespace tc::server
