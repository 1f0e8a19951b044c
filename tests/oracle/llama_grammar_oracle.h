// llama.cpp's grammar sampler as an oracle for the GBNF token mask: a
// llama_sampler_init_grammar sampler on a LlamaVocab (libllama, loaded by
// llama_tokenizer_oracle.h), applied to every token id with logit 0 to read
// which tokens llama.cpp allows next, and fed the chosen tokens with
// llama_sampler_accept. Tests call TC_LLAMA_ORACLE_REQUIRE_OR_SKIP() first;
// a libllama without the four sampler functions is broken (the test fails).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/oracle/llama_tokenizer_oracle.h"

namespace tc::oracle {

// Empty when libllama exports llama_sampler_init_grammar, llama_sampler_apply,
// llama_sampler_accept and llama_sampler_free; else why not (the missing
// names, or the library's own unavailability).
const std::string& llama_grammar_unusable_reason();

// One grammar sampler. Move-only; frees the sampler on destruction. Not
// thread-safe.
class LlamaGrammar {
 public:
  // llama_sampler_init_grammar(vocab, grammar, root). Throws
  // std::runtime_error when the functions are missing or llama.cpp refuses
  // the grammar (with the tail of its log). `vocab` must outlive this.
  LlamaGrammar(const LlamaVocab& vocab, const std::string& grammar, const std::string& root = "root");
  ~LlamaGrammar();
  LlamaGrammar(LlamaGrammar&& other) noexcept;
  LlamaGrammar& operator=(LlamaGrammar&&) = delete;
  LlamaGrammar(const LlamaGrammar&) = delete;
  LlamaGrammar& operator=(const LlamaGrammar&) = delete;

  // llama_sampler_apply on the ids 0..n_vocab-1, each with logit 0:
  // [n_vocab], 1 where the logit is left finite (the token may come next).
  std::vector<uint8_t> allowed(int32_t n_vocab);
  // llama_sampler_accept: `token` (one allowed() allowed) is generated.
  // llama.cpp aborts the process on an end-of-generation token the grammar
  // does not allow, and throws on a text token it does not.
  void accept(int32_t token);

 private:
  void* sampler_ = nullptr;  // llama_sampler*
};

}  // namespace tc::oracle
