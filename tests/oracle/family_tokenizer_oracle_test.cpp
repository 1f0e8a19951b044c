// Our tokenizer against llama.cpp's on vocabularies of real size and layout:
// a Qwen2/Qwen3-like one (byte-level BPE, pre-tokenizer "qwen2", 151,936
// tokens), a Gemma-3-like one (SPM without space prefix, byte fallback,
// 262,144 tokens), a Gemma-4-like one (tokenizer model "gemma4", 262,144
// tokens) and a BERT-like one (WordPiece, tokenizer model "bert", 30,522
// tokens, also with each setting of its normalizer keys and with add_bos and
// add_sep off), made by profiler/family_vocab and written as vocab-only GGUF
// files (Qwen's and Gemma 3's carrying the family's chat template). Both
// must give the same ids on the oracle texts plus the families' special
// token texts, the same piece for every id, the same detokenized text and
// the same end-of-generation ids, and the same ids for the family's chat
// prompts (rendered from the file's template over the fixture
// conversations, tests/profiler/family_vocab_test.cpp checks the rendering
// itself; for Gemma 4, prompts written out in its format; for BERT, sentence
// pairs and embedding-model inputs). BERT has no EOS (its [PAD] ends
// generation in both, found by text as a fill-in-the-middle pad).
// Skips with a warning without libllama.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "engine/text/chat_template.h"
#include "engine/text/tokenizer.h"
#include "engine/text/vocab.h"
#include "profiler/family_vocab.h"
#include "tests/oracle/llama_tokenizer_oracle.h"
#include "tests/oracle/tokenizer_oracle_checks.h"
#include "tests/test_util.h"

namespace {

using tc::oracle::LlamaVocab;
using tc::profiler::VocabFamily;
using tc::text::Tokenizer;
using tc::text::Vocab;
using json = nlohmann::json;

// Random texts per family: 2000 in the default run, more (and longer) in
// the [.slow] sweep.
constexpr int kRandomTexts = 2000;
constexpr int kSlowRandomTexts = 30000;

const std::filesystem::path& template_dir() {
  static const auto dir = tc::test::source_dir() / "tests" / "data" / "chat_templates";
  return dir;
}

struct Family {
  VocabFamily family;
  const char* chat_template;  // fixture stem under tests/data/chat_templates/templates, or nullptr
  std::vector<std::string> fragments;  // special texts mixed into the random texts
  std::vector<std::string> prompts = {};  // without a template: chat prompts as the family writes them
  bool llama_cleans_spaces = false;  // llama_detokenize's clean_spaces step applies (check_detokenize)
  std::string variant = {};  // names a changed vocab (file name and messages)
  std::function<void(Vocab&)> adjust = {};  // changes the family's vocab before it is written
};

Family qwen2_family() {
  return {VocabFamily::Qwen2,
          "qwen3",
          {"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\n", "<tool_call>", "</tool_call>",
           "<think>", "</think>", "<|fim_prefix|>", "[PAD151700]", "<|im_end", "im_start|>", "<tool_", "\t\t",
           "    ", "\n\n\n"}};
}

Family gemma3_family() {
  return {VocabFamily::Gemma3,
          "gemma3",
          {"<start_of_turn>", "<end_of_turn>", "<start_of_turn>model\n", "<bos>", "<eos>", "<pad>", "<mask>",
           "<unused12>", "<unused6000>", "<start_of_image>", "<table>", "<td>", "</h1>", "<h7>", "\t\t", "    ",
           "\n\n\n", "<start_of", "_turn>"}};
}

// Gemma 4's turn, thinking and tool-call format
// (ai.google.dev/gemma/docs/core/prompt-formatting-gemma4).
Family gemma4_family() {
  const std::string newlines(40, '\n');  // longer than any newline-run token
  return {VocabFamily::Gemma4,
          nullptr,
          {"<|turn>", "<turn|>", "<|turn>user\n", "<|turn>model\n", "<|think|>", "<|tool>", "<tool|>",
           "<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>", "<|channel>", "<channel|>",
           "<|\"|>", "<bos>", "<eos>", "<pad>", "<mask>", "<unused12>", "<unused6000>", "<|image>", "<audio|>",
           "<table>", "</h1>", "\t\t", "    ", "\n\n\n", newlines, "<|turn", "turn|>", " ?", " 's", " ' "},
          {"<bos><|turn>system\nYou are a helpful assistant.<turn|>\n<|turn>user\nHello!<turn|>\n<|turn>model\n",
           "<bos><|turn>system\n<|think|>Think first.<turn|>\n<|turn>user\nWhy is the sky blue?<turn|>\n"
           "<|turn>model\n<|channel>thought\nRayleigh scattering.<channel|>Because of Rayleigh scattering.<turn|>\n",
           "<bos><|turn>system\n<|tool>declaration:get_weather{description:<|\"|>Weather of a city<|\"|>,"
           "parameters:{properties:{city:{type:<|\"|>STRING<|\"|>}}}}<tool|><turn|>\n<|turn>user\n"
           "Weather in Paris?<turn|>\n<|turn>model\n<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}"
           "<tool_call|><|tool_response>response:get_weather{temperature:21,unit:<|\"|>C<|\"|>}"
           "<tool_response|>It is 21 \xC2\xB0" "C in Paris.<turn|>\n<|turn>model\n",
           "<|turn>user\nWrite </s> and <s> as HTML.<turn|>\n<|turn>model\n<s>struck</s><turn|>\n"},
          true};
}

// BERT's: its special texts whole and cut, cased, accented, compatibility
// and CJK-supplement characters, format and control characters, what its
// punctuation splitting and llama.cpp's space clean-up touch; prompts as
// embedding and reranking models get them (parsed specials: sentence pairs).
Family bert_family(std::string variant = {}, std::function<void(Vocab&)> adjust = {}) {
  return {VocabFamily::Bert,
          nullptr,
          {"[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "[unused5]", "[CLS", "SEP]", "[", "]", "##", "##ing",
           "\xC3\x89" "COLE", "Caf\xC3\xA9", "na\xC3\xAFve", "\xC4\xB0stanbul", "Stra\xC3\x9F" "e", "\xC7\x85",
           "\xCE\xA9", "\xE2\x84\xAB", "\xEF\xAC\x81", "\xEF\xA4\x80", "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
           "\xEF\xBD\x86\xEF\xBD\x95\xEF\xBD\x8C\xEF\xBD\x8C", "\xE2\x85\xAB", "HeLLo", "WoRLD", "U.S.A.", "$100",
           "a+b=c", "foo_bar", "~`^|\\<>", "\xE2\x82\xAC", "\xC2\xA3", "\xC2\xBD", "\xC2\xB0", "\xC2\xAD",
           "\xE2\x80\x8B", "\x1B", "\xE3\x83\xBC", "\xEF\xBD\xB6\xEF\xBE\x80\xEF\xBD\xB6\xEF\xBE\x85", "\xC7\xB1",
           "\xF0\xAA\x9C\x80", "\xF0\xAB\xA0\xA0", "\xF0\xAF\xA0\x80", "\xC7\x84", "\xEF\xAC\x80", "\xE1\xBE\x80",
           "\xCE\xAC", "\xD0\x81", "\xD1\x91", " ?", " 's", " ' ", " .", " ,", "'re", "'ve", "\xCC\x81\xCC\x81",
           "x\xCC\xA3\xCC\x87", "\xE0\xA4\x95\xE0\xA4\xBF", "\xE0\xB8\x81\xE0\xB8\xB4"},
          {"[CLS] what is the capital of France? [SEP] Paris is the capital and largest city of France. [SEP]",
           "query: How do I bake bread?",
           "passage: Mix flour, water, salt & yeast; knead for 10 min., then let it rise (1-2 h).",
           "search_document: \xC3\x9Cn\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9 na\xC3\xAFve caf\xC3\xA9 \xE2\x80\x94 "
           "r\xC3\xA9sum\xC3\xA9, Stra\xC3\x9F" "e, \xC4\xB0stanbul, "
           "\xE6\x9D\xB1\xE4\xBA\xAC and \xEC\x84\x9C\xEC\x9A\xB8.",
           "Represent this sentence for searching relevant passages: [MASK] is a [MASK]."},
          true,
          std::move(variant),
          std::move(adjust)};
}

int llama_vocab_type(tc::text::TokenizerKind kind) {
  switch (kind) {
    case tc::text::TokenizerKind::Spm:
      return 1;
    case tc::text::TokenizerKind::Wpm:
      return 3;
    default:
      return 2;
  }
}

// The prompts of the file's template over the fixture conversations (or the
// family's own prompts), as the server tokenizes them (special texts
// parsed): the same ids from both.
void check_chat_prompts(const Family& f, const Tokenizer& ours, const LlamaVocab& ref) {
  if (!f.chat_template) {
    REQUIRE(!f.prompts.empty());
    for (const std::string& prompt : f.prompts) {
      INFO("prompt \"" << tc::oracle::escape_bytes(prompt, 400) << "\"");
      for (const bool add_special : {false, true}) {
        CHECK(ours.encode(prompt, {add_special, true}) == ref.tokenize(prompt, add_special, true));
      }
    }
    return;
  }
  REQUIRE(ours.vocab().chat_template.has_value());
  const tc::text::ChatTemplate tmpl(*ours.vocab().chat_template);
  const json conversations = json::parse(tc::test::read_file(template_dir() / "conversations.json"));
  size_t n_prompts = 0;
  for (const json& conv : conversations) {
    INFO("conversation " << conv["name"] << " with template " << f.chat_template);
    std::string prompt;
    try {
      prompt = tmpl.render(conv["variables"]);
    } catch (const tc::text::ChatTemplateError&) {
      continue;  // the template refuses it (as jinja2 does: chat_template_test)
    }
    for (const bool add_special : {false, true}) {
      CHECK(ours.encode(prompt, {add_special, true}) == ref.tokenize(prompt, add_special, true));
    }
    ++n_prompts;
  }
  CHECK(n_prompts >= 6);
}

void compare_family(const Family& f, int n_random, int max_fragments, uint32_t seed) {
  Vocab vocab = tc::profiler::make_family_vocab(f.family);
  if (f.adjust) f.adjust(vocab);
  if (f.chat_template) {
    vocab.chat_template = tc::test::read_file(template_dir() / "templates" / (std::string(f.chat_template) + ".jinja"));
  }
  const std::string name = std::string(tc::profiler::vocab_family_name(f.family)) + f.variant;
  INFO("vocab " << name);
  const auto path = tc::test::scratch_dir("family_tokenizer_oracle_" + name) / (name + ".gguf");
  tc::oracle::write_vocab_only_gguf(vocab, path);

  const auto ours = Tokenizer::create(tc::text::read_vocab(tc::gguf::GgufFile::open(path)));
  REQUIRE(ours->n_vocab() == vocab.n_vocab());

  const LlamaVocab ref(path);
  REQUIRE(ref.n_tokens() == vocab.n_vocab());
  REQUIRE(ref.type() == llama_vocab_type(vocab.kind));
  REQUIRE(ref.bos() == vocab.bos_id);
  REQUIRE(ref.eos() == vocab.eos_id);

  const auto texts = tc::oracle::oracle_texts(n_random, max_fragments, seed, f.fragments);
  tc::oracle::require_valid_utf8(texts);
  tc::oracle::check_encodings(ref, *ours, texts);
  tc::oracle::check_pieces(ref, *ours);
  tc::oracle::check_detokenize(ref, *ours, texts, f.llama_cleans_spaces);
  tc::oracle::check_end_of_generation(ref, *ours, vocab.kind != tc::text::TokenizerKind::Wpm);
  check_chat_prompts(f, *ours, ref);
}

}  // namespace

TEST_CASE("Qwen2-like 151936-token BPE vocab tokenizes as llama.cpp does", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_family(qwen2_family(), kRandomTexts, 12, 36);
}

TEST_CASE("Gemma3-like 262144-token SPM vocab tokenizes as llama.cpp does", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_family(gemma3_family(), kRandomTexts, 12, 36);
}

TEST_CASE("Gemma4-like 262144-token gemma4 vocab tokenizes as llama.cpp does", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_family(gemma4_family(), kRandomTexts, 12, 36);
}

TEST_CASE("BERT-like 30522-token WordPiece vocab tokenizes as llama.cpp does", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_family(bert_family(), kRandomTexts, 12, 36);
}

TEST_CASE("BERT-like vocab with each normalizer setting tokenizes as llama.cpp does", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  const auto normalizer = [](bool lowercase, bool strip_accents) {
    return [=](Vocab& v) {
      v.normalizer_lowercase = lowercase;
      v.normalizer_strip_accents = strip_accents;
    };
  };
  compare_family(bert_family("_cased", normalizer(false, false)), kRandomTexts / 4, 12, 37);
  compare_family(bert_family("_strip_only", normalizer(false, true)), kRandomTexts / 4, 12, 38);
  compare_family(bert_family("_lower_only", normalizer(true, false)), kRandomTexts / 4, 12, 39);
  // llama.cpp adds [CLS] ... [SEP] with the specials whatever these say.
  compare_family(bert_family("_no_add", [](Vocab& v) {
                   v.add_bos = false;
                   v.add_sep = false;
                 }),
                 kRandomTexts / 4, 12, 40);
}

TEST_CASE("family vocabs match llama.cpp on a large random sweep", "[oracle][text][llama][.slow]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_family(qwen2_family(), kSlowRandomTexts, 40, 20260101);
  compare_family(gemma3_family(), kSlowRandomTexts, 40, 20260102);
  compare_family(gemma4_family(), kSlowRandomTexts, 40, 20260103);
  compare_family(bert_family(), kSlowRandomTexts, 40, 20260104);
}
