// libllama's grammar sampler for the GBNF oracle test: the four sampler
// functions resolved from the handle the tokenizer oracle opened, and the
// token data structs of llama.h (llama.cpp "v0.5.0", the npm build the
// tokenizer oracle pins), passed by pointer.
#include "tests/oracle/llama_grammar_oracle.h"

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <utility>

#include "tests/oracle/shared_library.h"

namespace tc::oracle {
namespace {

// llama_token_data and llama_token_data_array as llama.h declares them.
struct TokenData {
  int32_t id;
  float logit;
  float p;
};
static_assert(sizeof(TokenData) == 12);

struct TokenDataArray {
  TokenData* data;
  size_t size;
  int64_t selected;
  bool sorted;
};
static_assert(sizeof(TokenDataArray) == 32);
static_assert(offsetof(TokenDataArray, size) == 8 && offsetof(TokenDataArray, selected) == 16 &&
              offsetof(TokenDataArray, sorted) == 24);

using InitGrammarFn = void* (*)(const void* vocab, const char* grammar_str, const char* grammar_root);
using ApplyFn = void (*)(void* sampler, TokenDataArray* cur_p);
using AcceptFn = void (*)(void* sampler, int32_t token);
using FreeFn = void (*)(void* sampler);

struct GrammarApi {
  InitGrammarFn llama_sampler_init_grammar = nullptr;
  ApplyFn llama_sampler_apply = nullptr;
  AcceptFn llama_sampler_accept = nullptr;
  FreeFn llama_sampler_free = nullptr;
  std::string reason;  // empty when all four resolved
};

GrammarApi load() {
  GrammarApi a;
  void* handle = llama_library_handle();
  if (handle == nullptr) {
    a.reason = "libllama unavailable: " + llama_unavailable_reason();
    return a;
  }
  std::string missing;
  resolve_symbol(handle, "llama_sampler_init_grammar", a.llama_sampler_init_grammar, missing);
  resolve_symbol(handle, "llama_sampler_apply", a.llama_sampler_apply, missing);
  resolve_symbol(handle, "llama_sampler_accept", a.llama_sampler_accept, missing);
  resolve_symbol(handle, "llama_sampler_free", a.llama_sampler_free, missing);
  if (!missing.empty()) a.reason = llama_library_path().string() + " lacks the symbols: " + missing;
  return a;
}

const GrammarApi& api() {
  static const GrammarApi instance = load();
  return instance;
}

}  // namespace

const std::string& llama_grammar_unusable_reason() { return api().reason; }

LlamaGrammar::LlamaGrammar(const LlamaVocab& vocab, const std::string& grammar, const std::string& root) {
  const GrammarApi& a = api();
  if (!a.reason.empty()) throw std::runtime_error("llama.cpp grammar oracle unusable: " + a.reason);
  take_llama_log_tail();
  sampler_ = a.llama_sampler_init_grammar(vocab.raw(), grammar.c_str(), root.c_str());
  if (sampler_ == nullptr) {
    throw std::runtime_error("llama_sampler_init_grammar refused the grammar: " + take_llama_log_tail());
  }
}

LlamaGrammar::~LlamaGrammar() {
  if (sampler_ != nullptr) api().llama_sampler_free(sampler_);
}

LlamaGrammar::LlamaGrammar(LlamaGrammar&& other) noexcept : sampler_(std::exchange(other.sampler_, nullptr)) {}

std::vector<uint8_t> LlamaGrammar::allowed(int32_t n_vocab) {
  std::vector<TokenData> data(static_cast<size_t>(n_vocab));
  for (int32_t t = 0; t < n_vocab; ++t) data[static_cast<size_t>(t)] = {t, 0.0f, 0.0f};
  TokenDataArray array{data.data(), data.size(), -1, false};
  api().llama_sampler_apply(sampler_, &array);
  // The grammar sampler only writes -inf into the logits; it neither
  // reorders nor resizes the array.
  if (array.data != data.data() || array.size != data.size()) {
    throw std::runtime_error("llama_sampler_apply replaced the token array");
  }
  std::vector<uint8_t> out(static_cast<size_t>(n_vocab), 0);
  for (const TokenData& d : data) {
    if (d.id < 0 || d.id >= n_vocab) throw std::runtime_error("llama_sampler_apply wrote a bad token id");
    out[static_cast<size_t>(d.id)] = std::isfinite(d.logit) ? 1 : 0;
  }
  return out;
}

void LlamaGrammar::accept(int32_t token) { api().llama_sampler_accept(sampler_, token); }

}  // namespace tc::oracle
