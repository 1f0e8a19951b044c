// read_vocab / write_vocab through real GGUF files: round trips of trained
// vocabs, llama.cpp's defaults for missing keys, and errors that name the
// key at fault.
#include <catch2/catch.hpp>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/tokenizer.h"
#include "engine/text/vocab.h"
#include "tests/engine/text/text_test_util.h"
#include "tests/test_util.h"

using namespace tc::text;
using tc::gguf::GgufFile;
using tc::gguf::GgufWriter;
using tc::gguf::ModelLoadError;
using tc::gguf::Value;

namespace {

GgufFile write_and_open(const GgufWriter& w, const std::string& name) {
  const auto path = tc::test::scratch_dir("vocab_gguf_" + name) / "vocab.gguf";
  w.write(path);
  return GgufFile::open(path);
}

// A minimal writer: the model, tokens t0, t1, ... and, for gpt2, one merge.
GgufWriter minimal(const std::string& model, size_t n_tokens = 16) {
  GgufWriter w;
  w.set("tokenizer.ggml.model", Value(model));
  std::vector<std::string> tokens;
  for (size_t i = 0; i < n_tokens; ++i) {
    std::string t = "t";
    t += std::to_string(i);
    tokens.push_back(t);
  }
  w.set("tokenizer.ggml.tokens", Value::string_array(tokens));
  if (model == "gpt2") w.set("tokenizer.ggml.merges", Value::string_array({"t 1"}));
  return w;
}

// The key a read_vocab failure names.
std::string failing_key(const GgufFile& f) {
  try {
    read_vocab(f);
  } catch (const ModelLoadError& e) {
    return e.item();
  }
  return "(no error)";
}

void check_same(const Vocab& a, const Vocab& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.pre == b.pre);
  CHECK(a.tokens == b.tokens);
  CHECK(a.scores == b.scores);
  CHECK(a.types == b.types);
  CHECK(a.merges == b.merges);
  CHECK(a.bos_id == b.bos_id);
  CHECK(a.eos_id == b.eos_id);
  CHECK(a.unk_id == b.unk_id);
  CHECK(a.pad_id == b.pad_id);
  CHECK(a.add_bos == b.add_bos);
  CHECK(a.add_eos == b.add_eos);
  CHECK(a.add_space_prefix == b.add_space_prefix);
  CHECK(a.chat_template == b.chat_template);
}

}  // namespace

TEST_CASE("vocab: trained vocabs round-trip through GGUF", "[text][vocab]") {
  for (const auto kind : {TokenizerKind::Spm, TokenizerKind::Bpe}) {
    Vocab v = tc::text::test::trained_vocab(kind, 4096);
    v.chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}";
    if (kind == TokenizerKind::Spm) v.pad_id = 0;
    GgufWriter w;
    write_vocab(v, w);
    const GgufFile f = write_and_open(w, kind == TokenizerKind::Spm ? "spm" : "bpe");
    CHECK(f.get_string("tokenizer.ggml.model") == (kind == TokenizerKind::Spm ? "llama" : "gpt2"));
    const Vocab back = read_vocab(f);
    check_same(v, back);
    const auto tok = Tokenizer::create(back);
    CHECK(tok->decode(tok->encode("round trip \xE2\x9C\x93")) == "round trip \xE2\x9C\x93");
  }
}

TEST_CASE("vocab: llama.cpp defaults for missing keys", "[text][vocab]") {
  SECTION("llama") {
    const Vocab v = read_vocab(write_and_open(minimal("llama"), "llama_defaults"));
    CHECK(v.kind == TokenizerKind::Spm);
    CHECK(v.n_vocab() == 16);
    CHECK(v.types == std::vector<TokenType>(16, TokenType::Normal));
    CHECK(v.scores.empty());
    CHECK(v.unk_id == 0);
    CHECK(v.bos_id == 1);
    CHECK(v.eos_id == 2);
    CHECK(v.pad_id == -1);
    CHECK(v.add_bos);
    CHECK_FALSE(v.add_eos);
    CHECK(v.add_space_prefix);
    CHECK_FALSE(v.chat_template.has_value());
  }
  SECTION("gpt2 with the llama3 pre-tokenizer adds BOS") {
    GgufWriter w = minimal("gpt2");
    w.set("tokenizer.ggml.pre", Value(std::string("llama-bpe")));
    const Vocab v = read_vocab(write_and_open(w, "gpt2_llama3"));
    CHECK(v.kind == TokenizerKind::Bpe);
    CHECK(v.pre == "llama-bpe");
    CHECK(v.add_bos);
    CHECK(v.bos_id == 11);  // llama.cpp's gpt2 default
    CHECK(v.unk_id == -1);
    CHECK_FALSE(v.add_space_prefix);
    CHECK(v.merges == std::vector<std::string>{"t 1"});
  }
  SECTION("gpt2 default pre-tokenizer, explicit flags") {
    GgufWriter w = minimal("gpt2");
    w.set("tokenizer.ggml.bos_token_id", Value(uint32_t{3}));
    w.set("tokenizer.ggml.eos_token_id", Value(uint32_t{4}));
    w.set("tokenizer.ggml.add_eos_token", Value(true));
    const Vocab v = read_vocab(write_and_open(w, "gpt2_default"));
    CHECK(v.pre.empty());
    CHECK_FALSE(v.add_bos);
    CHECK(v.add_eos);
    CHECK(v.bos_id == 3);
    CHECK(v.eos_id == 4);
  }
}

TEST_CASE("vocab: read errors name the key", "[text][vocab]") {
  {
    GgufWriter w;
    w.set("tokenizer.ggml.model", Value(std::string("llama")));
    CHECK(failing_key(write_and_open(w, "no_tokens")) == "tokenizer.ggml.tokens");
  }
  {
    GgufWriter w;
    w.set("general.architecture", Value(std::string("llama")));
    CHECK(failing_key(write_and_open(w, "no_model")) == "tokenizer.ggml.model");
  }
  {
    const GgufFile f = write_and_open(minimal("rwkv"), "rwkv");
    CHECK(failing_key(f) == "tokenizer.ggml.model");
    CHECK_THROWS_WITH(read_vocab(f), Catch::Contains("rwkv") && Catch::Contains("llama") &&
                                         Catch::Contains("gpt2") && Catch::Contains("bert") && Catch::Contains("t5"));
  }
  {
    GgufWriter w = minimal("llama");
    w.set("tokenizer.ggml.scores", Value::f32_array({0.0f, -1.0f}));
    const GgufFile f = write_and_open(w, "scores_len");
    CHECK(failing_key(f) == "tokenizer.ggml.scores");
    CHECK_THROWS_WITH(read_vocab(f), Catch::Contains("2") && Catch::Contains("16"));
  }
  {
    GgufWriter w = minimal("llama");
    w.set("tokenizer.ggml.token_type", Value::i32_array({1, 1, 1}));
    CHECK(failing_key(write_and_open(w, "types_len")) == "tokenizer.ggml.token_type");
  }
  {
    GgufWriter w = minimal("llama");
    w.set("tokenizer.ggml.bos_token_id", Value(uint32_t{16}));
    const GgufFile f = write_and_open(w, "bos_range");
    CHECK(failing_key(f) == "tokenizer.ggml.bos_token_id");
    CHECK_THROWS_WITH(read_vocab(f), Catch::Contains("out of range"));
  }
  {
    GgufWriter w = minimal("llama");
    w.set("tokenizer.ggml.eos_token_id", Value(uint32_t{1000}));
    CHECK(failing_key(write_and_open(w, "eos_range")) == "tokenizer.ggml.eos_token_id");
  }
  {
    GgufWriter w;
    w.set("tokenizer.ggml.model", Value(std::string("gpt2")));
    w.set("tokenizer.ggml.tokens", Value::string_array({"a", "b"}));
    CHECK(failing_key(write_and_open(w, "no_merges")) == "tokenizer.ggml.merges");
  }
  {
    GgufWriter w = minimal("gpt2");
    w.set("tokenizer.ggml.pre", Value(std::string("no-such-pre")));
    const GgufFile f = write_and_open(w, "bad_pre");
    CHECK(failing_key(f) == "tokenizer.ggml.pre");
    CHECK_THROWS_WITH(read_vocab(f), Catch::Contains("no-such-pre") && Catch::Contains("\"tekken\""));
  }
  {
    // A name llama.cpp knows but whose BPE is not supported says why.
    GgufWriter w = minimal("gpt2");
    w.set("tokenizer.ggml.pre", Value(std::string("sarvam-moe")));
    const GgufFile f = write_and_open(w, "refused_pre");
    CHECK(failing_key(f) == "tokenizer.ggml.pre");
    CHECK_THROWS_WITH(read_vocab(f), Catch::Contains("sarvam-moe") && Catch::Contains("raw UTF-8"));
  }
  {
    GgufWriter w;
    w.set("tokenizer.ggml.model", Value(std::string("llama")));
    w.set("tokenizer.ggml.tokens", Value::string_array({"a", "b", "a"}));
    CHECK(failing_key(write_and_open(w, "duplicate")) == "tokenizer.ggml.tokens");
  }
  {
    // One token: the default BOS id 1 is outside the vocab, yet add_bos is on.
    GgufWriter w = minimal("llama", 1);
    CHECK(failing_key(write_and_open(w, "add_bos")) == "tokenizer.ggml.add_bos_token");
  }
}
