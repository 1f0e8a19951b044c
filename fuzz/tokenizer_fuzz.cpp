// libFuzzer target for the tokenizer on text a client sends (prompts,
// /tokenize): the bundled model's vocab (models/default.gguf), each input
// encoded with and without special-token parsing, decoded whole and
// streamed token by token. Invariants: every id is in [0, n_vocab); valid
// UTF-8 decodes back to itself (the trained tokenizers' round trip; for an
// SPM vocab, text without U+2581, its space mark); the
// streamed pieces are whole UTF-8 and concatenate to the whole decode.
// Then every pre-tokenizer (one name per behaviour) splits the sanitized
// text: its words are non-empty views that cover the text in order.
// Any exception, sanitizer report or broken invariant is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/text/pre_tokenizer.h"
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

// Every pre-tokenizer behaviour, one per supported name (duplicates kept:
// the cost is a few extra splits).
const std::vector<tc::text::PreTokenizer>& pre_tokenizers() {
  static const std::vector<tc::text::PreTokenizer> all = [] {
    std::vector<tc::text::PreTokenizer> out;
    const std::string_view list = tc::text::supported_pre_tokenizer_names();
    for (size_t pos = 0; (pos = list.find('"', pos)) != std::string_view::npos;) {
      const size_t end = list.find('"', pos + 1);
      const auto pre = tc::text::pre_tokenizer_from_name(list.substr(pos + 1, end - pos - 1));
      require(pre.has_value(), "every listed name is supported");
      bool seen = false;
      for (const auto p : out) seen |= p == *pre;
      if (!seen) out.push_back(*pre);
      pos = end + 1;
    }
    return out;
  }();
  return all;
}

void check_pre_tokenizers(std::string_view input) {
  const std::string text = tc::text::utf8_sanitize(input);
  for (const auto pre : pre_tokenizers()) {
    size_t at = 0;
    for (const std::string_view w : tc::text::pre_tokenize(pre, text)) {
      require(!w.empty(), "pre-tokenizer words are not empty");
      require(w.data() == text.data() + at, "pre-tokenizer words follow each other");
      at += w.size();
    }
    require(at == text.size(), "pre-tokenizer words cover the text");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tokenizer();
  pre_tokenizers();
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
  check_pre_tokenizers(text);
  return 0;
}
