// Our tokenizer against llama.cpp's on vocabularies of real size and layout:
// a Qwen2/Qwen3-like one (byte-level BPE, pre-tokenizer "qwen2", 151,936
// tokens), a Gemma-3-like one (SPM without space prefix, byte fallback,
// 262,144 tokens) and a Gemma-4-like one (tokenizer model "gemma4", 262,144
// tokens), made by profiler/family_vocab and written as vocab-only GGUF
// files (Qwen's and Gemma 3's carrying the family's chat template). Both
// must give the same ids on the oracle texts plus the families' special
// token texts, the same piece for every id, the same detokenized text and
// the same end-of-generation ids, and the same ids for the family's chat
// prompts (rendered from the file's template over the fixture
// conversations, tests/profiler/family_vocab_test.cpp checks the rendering
// itself; for Gemma 4, prompts written out in its format). Skips with a
// warning without libllama.
#include <catch2/catch.hpp>

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
  if (f.chat_template) {
    vocab.chat_template = tc::test::read_file(template_dir() / "templates" / (std::string(f.chat_template) + ".jinja"));
  }
  const std::string name(tc::profiler::vocab_family_name(f.family));
  const auto path = tc::test::scratch_dir("family_tokenizer_oracle_" + name) / (name + ".gguf");
  tc::oracle::write_vocab_only_gguf(vocab, path);

  const auto ours = Tokenizer::create(tc::text::read_vocab(tc::gguf::GgufFile::open(path)));
  REQUIRE(ours->n_vocab() == vocab.n_vocab());

  const LlamaVocab ref(path);
  REQUIRE(ref.n_tokens() == vocab.n_vocab());
  REQUIRE(ref.type() == (vocab.kind == tc::text::TokenizerKind::Spm ? 1 : 2));
  REQUIRE(ref.bos() == vocab.bos_id);
  REQUIRE(ref.eos() == vocab.eos_id);

  const auto texts = tc::oracle::oracle_texts(n_random, max_fragments, seed, f.fragments);
  tc::oracle::require_valid_utf8(texts);
  tc::oracle::check_encodings(ref, *ours, texts);
  tc::oracle::check_pieces(ref, *ours);
  tc::oracle::check_detokenize(ref, *ours, texts, f.llama_cleans_spaces);
  tc::oracle::check_end_of_generation(ref, *ours);
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

TEST_CASE("family vocabs match llama.cpp on a large random sweep", "[oracle][text][llama][.slow]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_family(qwen2_family(), kSlowRandomTexts, 40, 20260101);
  compare_family(gemma3_family(), kSlowRandomTexts, 40, 20260102);
  compare_family(gemma4_family(), kSlowRandomTexts, 40, 20260103);
}
