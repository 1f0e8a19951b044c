// Our tokenizer against llama.cpp's on vocabularies of real size and layout:
// a Qwen2/Qwen3-like one (byte-level BPE, pre-tokenizer "qwen2", 151,936
// tokens), a Gemma-3-like one (SPM without space prefix, byte fallback,
// 262,144 tokens), a Gemma-4-like one (tokenizer model "gemma4", 262,144
// tokens), a BERT-like one (WordPiece, tokenizer model "bert", 30,522
// tokens, also with each setting of its normalizer keys and with add_bos and
// add_sep off) and an XLM-R-like one (SentencePiece unigram, tokenizer model
// "t5", 64,000 tokens with a precompiled charsmap; also without the charsmap
// and extra-whitespace removal, with T5's flags, and with user-defined and
// unused tokens added), made by profiler/family_vocab and written as
// vocab-only GGUF files (Qwen's and Gemma 3's carrying the family's chat
// template). Both
// must give the same ids on the oracle texts plus the families' special
// token texts, the same piece for every id, the same detokenized text and
// the same end-of-generation ids, and the same ids for the family's chat
// prompts (rendered from the file's template over the fixture
// conversations, tests/profiler/family_vocab_test.cpp checks the rendering
// itself; for Gemma 4, prompts written out in its format; for BERT, sentence
// pairs and embedding-model inputs; for XLM-R, its pairs and inputs, and
// invalid UTF-8 too). BERT has no EOS (its [PAD] ends generation in both,
// found by text as a fill-in-the-middle pad). A "bert" model file made with
// the XLM-R-like vocab loads in both and tokenizes the same.
// Skips with a warning without libllama.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "engine/model/loaded_model.h"
#include "engine/text/chat_template.h"
#include "engine/text/tokenizer.h"
#include "engine/text/vocab.h"
#include "profiler/family_vocab.h"
#include "tests/oracle/llama_context_oracle.h"
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

// XLM-R's: its special texts whole and cut; what the charsmap maps
// (full-width forms, ligatures, compatibility characters, letters with
// combining marks, half-width kana and voicing marks), makes spaces or
// deletes (controls, zero-width characters); whitespace runs; user-defined
// and unused texts of the variants; prompts as embedding and reranking models
// get them (parsed specials: XLM-R's sentence pairs <s> A </s></s> B </s>).
Family xlmr_family(std::string variant = {}, std::function<void(Vocab&)> adjust = {}) {
  return {VocabFamily::Xlmr,
          nullptr,
          {"<s>", "</s>", "<pad>", "<unk>", "<mask>", "<s", "/s>", "<mask", "\xEF\xBC\xA8\xEF\xBD\x85llo",
           "\xEF\xBC\x9C\xEF\xBD\x93\xEF\xBC\x9E", "\xEF\xBC\xA1", "\xEF\xBC\xA1\xEF\xBC\xA2",
           "\xEF\xBC\xA1\xEF\xBC\xBA", "\xEF\xAC\x81", "\xEF\xAC\x83", "\xC7\x85", "\xC4\xB2",
           "\xE2\x84\xA2", "\xE2\x84\x83", "\xE2\x85\xAB", "\xE2\x91\xA0", "\xE2\x91\xB3",
           "\xE2\x92\x9C", "\xF0\x9D\x90\x80", "\xF0\x9D\x9F\x8E", "\xC2\xBD", "\xC2\xB2",
           "\xC2\xB4", "\xC2\xA8", "\xE2\x80\xA6", "\xE3\x8D\xBF", "\xE3\x8E\x8F", "\xEF\xA4\x80",
           "\xEF\xBB\xBB", "e\xCC\x81", "E\xCC\x80", "y\xCC\x88", "s\xCC\x8C", "a\xCC\x8C",
           "\xEF\xBD\xB6", "\xEF\xBD\xB6\xEF\xBE\x9E", "\xEF\xBE\x8A\xEF\xBE\x9F", "\xEF\xBE\x9E",
           "\xE3\x82\xAB\xE3\x82\x99", "\xEF\xBD\xB3\xEF\xBE\x9E", "\xCE\x90", "\xCF\x90",
           "\xC2\xA0", "\xE2\x80\x83", "\xE3\x80\x80", "\xE2\x80\x8B", "\xEF\xBB\xBF", "\xC2\x85",
           "\xC2\x9F", "\x01", "\x1F", "\t\t", "\n \n", "     ", "\xE2\x96\x81 ", "Caf\xC3\xA9",
           "\xE6\x9D\xB1\xE4\xBA\xAC", "\xD0\x9C\xD0\xBE\xD1\x81\xD0\xBA\xD0\xB2\xD0\xB0",
           "<tag>", "<|im_end|>", "[PAD64003]", "\xE2\x96\x81hello\xE2\x96\x81world", " hello world"},
          {"<s>query: how much protein should a female eat</s>",
           "<s> what is panda?</s></s>The giant panda is a bear species endemic to China.</s>",
           "passage: Mix flour, water, salt & yeast; knead for 10 min., then let it rise (1-2 h).",
           "\xEF\xBC\xB1\xEF\xBD\x95\xEF\xBD\x85\xEF\xBD\x92\xEF\xBD\x99:  \xEF\xAC\x81ne "
           "caf\xC3\xA9 \xE2\x80\x94 \xE6\x9D\xB1\xE4\xBA\xAC\xE3\x81\xAE\xE5\xA4\xA9\xE6\xB0\x97\t\xE2\x91\xA0\n",
           "Represent this sentence: <mask> is a <mask>.</s>"},
          false,
          std::move(variant),
          std::move(adjust)};
}

int llama_vocab_type(tc::text::TokenizerKind kind) {
  switch (kind) {
    case tc::text::TokenizerKind::Spm:
      return 1;
    case tc::text::TokenizerKind::Wpm:
      return 3;
    case tc::text::TokenizerKind::Ugm:
      return 4;
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

// Each family's vocab, made once per run (the variants adjust a copy).
const Vocab& family_vocab(VocabFamily family) {
  static std::map<VocabFamily, Vocab> made;
  auto it = made.find(family);
  if (it == made.end()) it = made.emplace(family, tc::profiler::make_family_vocab(family)).first;
  return it->second;
}

// Bytes that are not UTF-8, which a UGM vocab's normalizer replaces as
// llama.cpp's does (the other kinds sanitize first: a documented difference).
const std::vector<std::string>& invalid_utf8_texts() {
  static const std::vector<std::string> texts = {
      "a\xFF" "b", "\xE6\x97", "\xE6\x97" "a", "\xC0\x80x", "\xED\xA0\x80", "<s\xFF>", "\xEF\xBC",
      "\xF0\x9F\x98", "\x80\x80 \xBF", "caf\xC3", "\xF8\x88\x80\x80\x80", " \xFE ", "\xEF\xBD\xB6\xEF\xBE",
      "\xC3\xA9\xCC", "<mask>\xE2\x96", "\xF4\x90\x80\x80"};
  return texts;
}

void compare_family(const Family& f, int n_random, int max_fragments, uint32_t seed) {
  Vocab vocab = family_vocab(f.family);
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
  if (vocab.kind == tc::text::TokenizerKind::Ugm) tc::oracle::check_encodings(ref, *ours, invalid_utf8_texts());
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
  compare_family(xlmr_family(), kSlowRandomTexts, 40, 20260105);
}

TEST_CASE("XLM-R-like 64000-token unigram vocab tokenizes as llama.cpp does", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_family(xlmr_family(), kRandomTexts, 12, 41);
}

TEST_CASE("XLM-R-like vocab variants tokenize as llama.cpp does", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  // T5's files: no charsmap there for some, and spaces kept.
  compare_family(xlmr_family("_no_charsmap",
                             [](Vocab& v) {
                               v.precompiled_charsmap.clear();
                               v.remove_extra_whitespaces = false;
                             }),
                 kRandomTexts / 2, 12, 42);
  // T5's flags: no BOS, EOS added; and no space prefix with the whitespace removal.
  compare_family(xlmr_family("_t5_flags",
                             [](Vocab& v) {
                               v.add_bos = false;
                               v.add_space_prefix = false;
                             }),
                 kRandomTexts / 2, 12, 43);
  // Added tokens: user-defined ones (scored 0; one full-width, whose bytes
  // the normalizer keeps as far as the input follows them; an end-of-turn
  // marker llama.cpp makes control), and unused ones the search may pick.
  compare_family(xlmr_family("_added",
                             [](Vocab& v) {
                               const auto add = [&](std::string t, tc::text::TokenType type, float score) {
                                 v.tokens.push_back(std::move(t));
                                 v.types.push_back(type);
                                 v.scores.push_back(score);
                               };
                               using tc::text::TokenType;
                               add("<tag>", TokenType::UserDefined, 0.0f);
                               add("\xEF\xBC\xA1\xEF\xBC\xBA", TokenType::UserDefined, 0.0f);
                               add("<|im_end|>", TokenType::UserDefined, 0.0f);
                               add("\xE2\x96\x81hello\xE2\x96\x81world", TokenType::UserDefined, -5.0f);
                               add("[PAD64003]", TokenType::Unused, -10000.0f);
                               add("\xE2\x96\x81" "Caf\xC3\xA9", TokenType::Unused, -1.0f);
                             }),
                 kRandomTexts / 2, 12, 44);
}

namespace {
const tc::oracle::llamacpp::LlamaCppLibrary& context_library() {
  return tc::oracle::llamacpp::LlamaCppLibrary::instance(tc::oracle::llama_library_path());
}
}  // namespace

TEST_CASE("A bert model with the XLM-R-like vocab loads and tokenizes as in llama.cpp", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  REQUIRE(context_library().ok());
  const auto path = tc::test::scratch_dir("family_tokenizer_oracle_bert_xlmr") / "bert_xlmr.gguf";
  const std::string bin = tc::test::shell_quote(tc::test::thermocline_binary().string());
  const std::string cmd = bin + " make-model -o " + tc::test::shell_quote(path.string()) +
                          " --arch bert --tokenizer xlmr --n-embd 128 --n-layer 2 --n-ff 256 --n-head 4 "
                          "--n-head-kv 4 --n-ctx 256 -t 2 --seed 5 --type f32";
  const auto made = tc::test::run_command(cmd);
  INFO(cmd << "\n" << made.output);
  REQUIRE(made.exit_code == 0);
  const auto inspected = tc::test::run_command(bin + " inspect --json " + tc::test::shell_quote(path.string()));
  INFO(inspected.output);
  REQUIRE(inspected.exit_code == 0);
  const json report = json::parse(inspected.output);
  CHECK(report["support"]["runnable"] == true);
  CHECK(report["tokenizer"]["model"] == "t5");
  CHECK(report["tokenizer"]["n_vocab"] == 64000);

  const auto loaded = tc::model::load_model(path);
  const tc::oracle::llamacpp::LlamaCppModel theirs(context_library(), path);  // weights and all
  CHECK(theirs.n_vocab() == 64000);
  CHECK(theirs.bos() == 0);
  CHECK(theirs.add_bos());
  const LlamaVocab ref(path);
  const auto texts = tc::oracle::oracle_texts(kRandomTexts / 4, 12, 45, xlmr_family().fragments);
  tc::oracle::check_encodings(ref, *loaded->tokenizer, texts);
  for (const std::string& prompt : xlmr_family().prompts) {
    INFO("prompt \"" << tc::oracle::escape_bytes(prompt) << "\"");
    CHECK(loaded->tokenizer->encode(prompt, {true, true}) == theirs.tokenize(prompt));
  }
}
