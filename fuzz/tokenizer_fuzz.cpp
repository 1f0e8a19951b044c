// libFuzzer target for the tokenizer on text a client sends (prompts,
// /tokenize): the bundled model's vocab (models/default.gguf), each input
// encoded with and without special-token parsing, decoded whole and
// streamed token by token. Invariants: every id is in [0, n_vocab); valid
// UTF-8 decodes back to itself (the trained tokenizers' round trip; for an
// SPM vocab, text without U+2581, its space mark); the
// streamed pieces are whole UTF-8 and concatenate to the whole decode.
// Any exception, sanitizer report or broken invariant is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "engine/gguf/gguf_file.h"
#include "engine/text/tokenizer.h"
#include "engine/text/unicode.h"
#include "engine/text/vocab.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

// THERMOCLINE_DEFAULT_MODEL: set by fuzz/CMakeLists.txt.
const tc::text::Tokenizer& tokenizer() {
  static const std::unique_ptr<tc::text::Tokenizer> t =
      tc::text::Tokenizer::create(tc::text::read_vocab(tc::gguf::GgufFile::open(THERMOCLINE_DEFAULT_MODEL)));
  return *t;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto& tok = tokenizer();
  for (const bool parse_special : {false, true}) {
    const auto ids = tok.encode(text, {.add_special = false, .parse_special = parse_special});
    for (const auto id : ids) require(id >= 0 && id < tok.n_vocab(), "ids in [0, n_vocab)");
    const std::string whole = tok.decode(ids);
    // SentencePiece vocabs write a space as U+2581, so that character in the text decodes as a
    // space (as in sentencepiece and llama.cpp): the round trip holds for text without it.
    const bool spm_space_mark =
        tok.vocab().kind == tc::text::TokenizerKind::Spm && text.find("\xe2\x96\x81") != std::string_view::npos;
    if (!parse_special && !spm_space_mark && tc::text::utf8_is_valid(text)) {
      require(whole == text, "valid UTF-8 round-trips");
    }
    tc::text::StreamingDetokenizer stream(tok);
    std::string streamed;
    for (const auto id : ids) {
      const std::string piece = stream.push(id);
      require(tc::text::utf8_is_valid(piece), "streamed pieces are whole UTF-8");
      streamed += piece;
    }
    streamed += stream.flush();
    require(streamed == whole, "the stream concatenates to the whole decode");
  }
  return 0;
}
