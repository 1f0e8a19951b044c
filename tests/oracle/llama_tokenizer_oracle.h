// llama.cpp's own tokenizer as an oracle for tc::text::Tokenizer: dlopens
// libllama from npm @node-llama-cpp/linux-x64 (the same folder as the ggml
// oracle), loads vocab-only GGUF files and exposes llama_tokenize,
// llama_token_to_piece and llama_detokenize. Optional like the ggml oracle:
// tests call TC_LLAMA_ORACLE_REQUIRE_OR_SKIP() first.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/text/vocab.h"
#include "tests/oracle/ggml_oracle.h"  // oracle_required()

namespace tc::oracle {

// Where libllama is looked for: $THERMOCLINE_LLAMA_LIB when set, else
// <repo>/.deps/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so
// (its RUNPATH $ORIGIN finds libggml*.so beside it).
std::filesystem::path llama_library_path();

// Whether libllama loaded and passed the layout checks; when it did not,
// llama_unavailable_reason() says why. llama_library_broken() is true when
// the library is there but unusable by this wrapper (a missing symbol, or a
// llama_model_params layout other than the pinned one): an upgrade of the
// npm package that needs this file updated, never a reason to skip.
bool llama_available();
bool llama_library_broken();
const std::string& llama_unavailable_reason();
// The dlopen() handle of libllama, for oracles that resolve more of its
// functions (llama_grammar_oracle.h); nullptr unless llama_available().
void* llama_library_handle();
// llama.cpp's recent warnings and errors (its log is captured, not printed),
// cleared by the call: for the messages of failures.
std::string take_llama_log_tail();

// general.architecture "llama" and the llama.* hyperparameters llama.cpp's
// loader requires of a vocab-only file (a tiny model; no tensors).
void set_vocab_only_model_keys(gguf::GgufWriter& w);

// Writes `vocab` as a vocab-only GGUF llama.cpp can load: general.architecture
// "llama", the llama.* hyperparameters its loader requires (a tiny model;
// no tensors), and the tokenizer.ggml.* keys from write_vocab.
void write_vocab_only_gguf(const text::Vocab& vocab, const std::filesystem::path& path);

// One vocab-only model loaded in libllama. Move-only; frees the model on
// destruction. Not thread-safe (llama.cpp's vocab caches are not).
class LlamaVocab {
 public:
  // Loads `path` with vocab_only set. Throws std::runtime_error naming the
  // path when the oracle is unavailable or llama.cpp refuses the file.
  explicit LlamaVocab(const std::filesystem::path& path);
  ~LlamaVocab();
  LlamaVocab(LlamaVocab&& other) noexcept;
  LlamaVocab& operator=(LlamaVocab&&) = delete;
  LlamaVocab(const LlamaVocab&) = delete;
  LlamaVocab& operator=(const LlamaVocab&) = delete;

  int32_t n_tokens() const;  // llama_vocab_n_tokens
  // llama_vocab_type: 1 = SPM, 2 = BPE (0 none, 3 WPM, 4 UGM, ...).
  int type() const;
  int32_t bos() const;  // -1 when none
  int32_t eos() const;
  // llama_vocab_fim_pre ... llama_vocab_fim_sep (-1 where none).
  text::FimTokens fim() const;
  // llama_vocab_is_eog: whether generating `id` ends the text.
  bool is_eog(int32_t id) const;

  // llama_tokenize (growing the buffer when llama.cpp asks for more).
  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;
  // llama_token_to_piece with lstrip 0.
  std::string token_to_piece(int32_t id, bool special) const;
  // llama_detokenize with remove_special off; `special` is unparse_special.
  std::string detokenize(const std::vector<int32_t>& ids, bool special) const;

  // The `const llama_vocab*` itself, for other libllama calls on this vocab
  // (valid while this object lives).
  const void* raw() const { return vocab_; }

 private:
  void* model_ = nullptr;        // llama_model*
  const void* vocab_ = nullptr;  // const llama_vocab*, owned by model_
};

}  // namespace tc::oracle

// First statement of a test that needs libllama: without the library the
// test passes with a warning (Catch2 v2 has no SKIP), unless
// THERMOCLINE_REQUIRE_ORACLE is set, where it fails; a library that is there
// but does not match the pinned version always fails.
#define TC_LLAMA_ORACLE_REQUIRE_OR_SKIP()                                                      \
  do {                                                                                         \
    if (!::tc::oracle::llama_available()) {                                                    \
      if (::tc::oracle::llama_library_broken() || ::tc::oracle::oracle_required()) {           \
        FAIL("llama.cpp tokenizer oracle unusable: " << ::tc::oracle::llama_unavailable_reason()); \
      }                                                                                        \
      WARN("SKIPPED (llama.cpp tokenizer oracle unavailable): "                                \
           << ::tc::oracle::llama_unavailable_reason());                                       \
      return;                                                                                  \
    }                                                                                          \
  } while (0)
