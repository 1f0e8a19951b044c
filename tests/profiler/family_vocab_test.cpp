// make_family_vocab: the Qwen2-like, Gemma3-like, Gemma4-like, BERT-like and
// XLM-R-like vocabs have their families' layout (sizes, special ids and
// types, keys), learned pieces that real text uses, and load back from a
// GGUF file unchanged, within a sanity bound of time (the time is reported;
// docs/models.md has the measured figures). A file carrying the family's
// chat template gives that template back: it renders the jinja2 fixtures,
// and each turn marker in the prompt becomes the family's control token.
// The precompiled charsmap builder (XLM-R's normalizer) against a brute
// force longest-key search.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/charsmap.h"
#include "engine/text/chat_template.h"
#include "engine/text/tokenizer.h"
#include "engine/text/ugm_normalizer.h"
#include "profiler/charsmap_builder.h"
#include "profiler/family_vocab.h"
#include "profiler/tokenizer_corpus.h"
#include "tests/test_util.h"

using tc::profiler::VocabFamily;
using tc::text::TokenId;
using tc::text::TokenType;
using tc::text::Vocab;
using json = nlohmann::json;

namespace {

// Not a speed check (benchmarks are): a loaded CI machine must pass.
constexpr double kLoadSecondsBound = 5.0;

const std::filesystem::path& template_dir() {
  static const auto dir = tc::test::source_dir() / "tests" / "data" / "chat_templates";
  return dir;
}

TokenId id_of(const Vocab& v, const std::string& text) {
  const auto it = std::find(v.tokens.begin(), v.tokens.end(), text);
  REQUIRE(it != v.tokens.end());
  return static_cast<TokenId>(it - v.tokens.begin());
}

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

// The corpus encoded: many distinct learned tokens, well under a token per
// 3 bytes (a vocab whose merges went unused would give about one per byte).
void check_pieces_used(const tc::text::Tokenizer& tok) {
  const std::string_view corpus = tc::profiler::tokenizer_corpus();
  const auto ids = tok.encode(corpus, {.add_special = false});
  const std::set<TokenId> distinct(ids.begin(), ids.end());
  INFO(ids.size() << " tokens, " << distinct.size() << " distinct, for " << corpus.size() << " bytes");
  CHECK(distinct.size() > 15000);
  CHECK(ids.size() * 3 < corpus.size());
  CHECK(tok.decode(ids) == corpus);
}

// Writes `vocab` with `template_stem`'s template (none when empty), loads it
// back timed, and checks what comes back.
std::unique_ptr<tc::text::Tokenizer> round_trip(const Vocab& vocab, const std::string& name,
                                                const std::string& template_stem) {
  Vocab with_template = vocab;
  if (!template_stem.empty()) {
    with_template.chat_template = tc::test::read_file(template_dir() / "templates" / (template_stem + ".jinja"));
  }
  const auto path = tc::test::scratch_dir("family_vocab_" + name) / (name + ".gguf");
  tc::gguf::GgufWriter w;
  w.set("general.architecture", tc::gguf::Value(std::string("llama")));
  tc::text::write_vocab(with_template, w);
  w.write(path);

  const auto start = std::chrono::steady_clock::now();
  const auto file = tc::gguf::GgufFile::open(path);
  auto tok = tc::text::Tokenizer::create(tc::text::read_vocab(file));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN(name << " vocab, " << vocab.n_vocab() << " tokens: GGUF parse + read_vocab + Tokenizer::create took "
            << seconds * 1000.0 << " ms");
  CHECK(seconds < kLoadSecondsBound);

  const Vocab back = tc::text::read_vocab(file);
  CHECK(back.kind == vocab.kind);
  CHECK(back.tokens == vocab.tokens);
  CHECK(back.types == vocab.types);
  CHECK(back.scores == vocab.scores);
  CHECK(back.merges == vocab.merges);
  CHECK(back.pre == vocab.pre);
  CHECK(back.bos_id == vocab.bos_id);
  CHECK(back.eos_id == vocab.eos_id);
  CHECK(back.add_bos == vocab.add_bos);
  CHECK(back.add_space_prefix == vocab.add_space_prefix);
  CHECK(back.chat_template == with_template.chat_template);
  return tok;
}

// The template read back from the file over every fixture conversation:
// jinja2's text, and one control token per turn marker once tokenized as
// the server tokenizes chat prompts (special texts parsed).
void check_chat_template(const tc::text::Tokenizer& tok, const std::string& template_stem,
                         const std::string& turn_marker) {
  REQUIRE(tok.vocab().chat_template.has_value());
  const tc::text::ChatTemplate tmpl(*tok.vocab().chat_template);
  const TokenId marker = id_of(tok.vocab(), turn_marker);
  REQUIRE(tok.vocab().types[static_cast<size_t>(marker)] == TokenType::Control);
  const json conversations = json::parse(tc::test::read_file(template_dir() / "conversations.json"));
  size_t n_rendered = 0;
  for (const json& conv : conversations) {
    const std::string stem = template_stem + "__" + conv["name"].get<std::string>();
    INFO("case " << stem);
    const auto expected = template_dir() / "expected" / (stem + ".txt");
    if (!std::filesystem::exists(expected)) {
      CHECK_THROWS_AS(tmpl.render(conv["variables"]), tc::text::ChatTemplateError);
      continue;
    }
    const std::string prompt = tmpl.render(conv["variables"]);
    CHECK(prompt == tc::test::read_file(expected));
    const auto ids = tok.encode(prompt, {.add_special = true, .parse_special = true});
    const auto n_markers = static_cast<size_t>(std::count(ids.begin(), ids.end(), marker));
    CHECK(n_markers == occurrences(prompt, turn_marker));
    CHECK(n_markers > 0);
    ++n_rendered;
  }
  CHECK(n_rendered >= 6);
}

}  // namespace

TEST_CASE("family_vocab: Qwen2-like vocab, its layout, load time and chat template", "[profiler][text]") {
  const Vocab v = tc::profiler::make_family_vocab(VocabFamily::Qwen2);
  REQUIRE(v.n_vocab() == 151936);
  CHECK(v.kind == tc::text::TokenizerKind::Bpe);
  CHECK(v.pre == "qwen2");
  CHECK(v.merges.size() == 151643u - 256u);
  CHECK(v.tokens[151643] == "<|endoftext|>");
  CHECK(v.tokens[151644] == "<|im_start|>");
  CHECK(v.tokens[151645] == "<|im_end|>");
  CHECK(v.types[151644] == TokenType::Control);
  CHECK(v.types[id_of(v, "<think>")] == TokenType::UserDefined);
  CHECK(v.types[id_of(v, "<tool_call>")] == TokenType::UserDefined);
  CHECK(v.tokens[151935] == "[PAD151935]");
  CHECK(v.types[151935] == TokenType::Unused);
  CHECK(std::count(v.types.begin(), v.types.begin() + 151643, TokenType::Normal) == 151643);
  CHECK(v.bos_id == 151643);
  CHECK(v.eos_id == 151645);
  CHECK(v.pad_id == 151643);
  CHECK_FALSE(v.add_bos);

  const auto tok = round_trip(v, "qwen2", "qwen3");
  check_pieces_used(*tok);
  check_chat_template(*tok, "qwen3", "<|im_start|>");
}

TEST_CASE("family_vocab: Gemma3-like vocab, its layout, load time and chat template", "[profiler][text]") {
  const Vocab v = tc::profiler::make_family_vocab(VocabFamily::Gemma3);
  REQUIRE(v.n_vocab() == 262144);
  CHECK(v.kind == tc::text::TokenizerKind::Spm);
  CHECK(v.merges.empty());
  CHECK(v.tokens[0] == "<pad>");
  CHECK(v.tokens[1] == "<eos>");
  CHECK(v.tokens[2] == "<bos>");
  CHECK(v.tokens[3] == "<unk>");
  CHECK(v.types[3] == TokenType::Unknown);
  CHECK(v.tokens[105] == "<start_of_turn>");
  CHECK(v.tokens[106] == "<end_of_turn>");
  CHECK(v.types[105] == TokenType::Control);
  CHECK(v.types[id_of(v, "\n\n")] == TokenType::UserDefined);
  CHECK(v.types[id_of(v, "    ")] == TokenType::UserDefined);
  CHECK(v.types[id_of(v, "<table>")] == TokenType::UserDefined);
  CHECK(v.types[id_of(v, "<0x0A>")] == TokenType::Byte);
  CHECK(v.tokens.back() == "<unused6241>");
  CHECK(v.bos_id == 2);
  CHECK(v.eos_id == 1);
  CHECK(v.unk_id == 3);
  CHECK(v.add_bos);
  CHECK_FALSE(v.add_space_prefix);
  CHECK(std::count(v.types.begin(), v.types.end(), TokenType::Byte) == 256);
  CHECK(std::count(v.types.begin(), v.types.end(), TokenType::Normal) > 250000);
  CHECK(std::count(v.types.begin(), v.types.end(), TokenType::Unused) == 0);

  const auto tok = round_trip(v, "gemma3", "gemma3");
  check_pieces_used(*tok);
  check_chat_template(*tok, "gemma3", "<start_of_turn>");
}

TEST_CASE("family_vocab: Gemma4-like vocab, its layout, load time and turn markers", "[profiler][text]") {
  const Vocab v = tc::profiler::make_family_vocab(VocabFamily::Gemma4);
  REQUIRE(v.n_vocab() == 262144);
  CHECK(v.kind == tc::text::TokenizerKind::Gemma4);
  CHECK(v.pre.empty());
  CHECK(v.merges.size() > 200000);
  CHECK(v.tokens[0] == "<pad>");
  CHECK(v.tokens[1] == "<eos>");
  CHECK(v.tokens[2] == "<bos>");
  CHECK(v.tokens[3] == "<unk>");
  CHECK(v.tokens[105] == "<|turn>");
  CHECK(v.tokens[106] == "<turn|>");
  CHECK(v.types[105] == TokenType::Control);
  CHECK(v.types[id_of(v, "<|think|>")] == TokenType::Control);
  CHECK(v.types[id_of(v, "<|tool_call>")] == TokenType::UserDefined);
  CHECK(v.types[id_of(v, "<|tool_response>")] == TokenType::UserDefined);
  CHECK(v.types[id_of(v, "<|channel>")] == TokenType::UserDefined);
  CHECK(v.types[id_of(v, "\n\n")] == TokenType::Normal);
  CHECK(v.types[id_of(v, "</s>")] == TokenType::UserDefined);
  CHECK(v.types[id_of(v, "<0x0A>")] == TokenType::Byte);
  CHECK(v.tokens.back() == "<unused6241>");
  CHECK(v.bos_id == 2);
  CHECK(v.eos_id == 1);
  CHECK(v.add_bos);
  CHECK_FALSE(v.add_space_prefix);
  CHECK(std::count(v.types.begin(), v.types.end(), TokenType::Byte) == 256);
  CHECK(std::count(v.types.begin(), v.types.end(), TokenType::Normal) > 250000);
  CHECK(std::count(v.types.begin(), v.types.end(), TokenType::Unused) == 0);
  // No merge makes a newline run: llama.cpp takes such a run whole.
  CHECK(std::none_of(v.merges.begin(), v.merges.end(), [](const std::string& m) { return m.front() == '\n'; }));

  const auto tok = round_trip(v, "gemma4", "");
  check_pieces_used(*tok);
  const std::string prompt = "<|turn>user\nHi<turn|>\n<|turn>model\nHello!<turn|>\n";
  const auto ids = tok->encode(prompt, {.add_special = true, .parse_special = true});
  CHECK(ids.front() == 2);
  CHECK(std::count(ids.begin(), ids.end(), 105) == 2);
  CHECK(std::count(ids.begin(), ids.end(), 106) == 2);
  CHECK(tok->decode(ids, true) == "<bos>" + prompt);
  CHECK(tok->vocab().is_end_of_generation(106));
  CHECK_FALSE(tok->vocab().is_end_of_generation(id_of(v, "</s>")));
}

TEST_CASE("family_vocab: BERT-like WordPiece vocab, its layout, load time and pieces", "[profiler][text]") {
  const Vocab v = tc::profiler::make_family_vocab(VocabFamily::Bert);
  REQUIRE(v.n_vocab() == 30522);
  CHECK(tc::profiler::vocab_family_from_name("bert") == VocabFamily::Bert);
  CHECK(tc::profiler::vocab_family_name(VocabFamily::Bert) == "bert");
  CHECK(v.kind == tc::text::TokenizerKind::Wpm);
  CHECK(v.tokens[0] == "[PAD]");
  CHECK(v.tokens[1] == "\xE2\x96\x81[unused0]");
  CHECK(v.tokens[99] == "\xE2\x96\x81[unused98]");
  CHECK(v.tokens[100] == "[UNK]");
  CHECK(v.tokens[101] == "[CLS]");
  CHECK(v.tokens[102] == "[SEP]");
  CHECK(v.tokens[103] == "[MASK]");
  CHECK(v.tokens[998] == "\xE2\x96\x81[unused993]");
  CHECK(std::count(v.types.begin(), v.types.end(), TokenType::Control) == 5);
  for (const TokenId id : {0, 100, 101, 102, 103}) CHECK(v.types[static_cast<size_t>(id)] == TokenType::Control);
  CHECK(std::count(v.types.begin(), v.types.end(), TokenType::Normal) == 30522 - 5);
  CHECK(v.scores.empty());
  CHECK(v.merges.empty());
  CHECK(v.pad_id == 0);
  CHECK(v.unk_id == 100);
  CHECK(v.bos_id == 101);
  CHECK(v.sep_id == 102);
  CHECK(v.mask_id == 103);
  CHECK(v.eos_id == -1);
  CHECK(v.add_bos);
  CHECK(v.add_sep);
  CHECK(v.normalizer_lowercase);
  CHECK(v.normalizer_strip_accents);
  // Learned pieces as the normalizer leaves text: no capitals, U+2581 only
  // in front; characters both as word starts and as continuations.
  const std::string sp = "\xE2\x96\x81";
  size_t n_starts = 0;
  for (size_t i = 999; i < v.tokens.size(); ++i) {
    const std::string& t = v.tokens[i];
    INFO("token " << i << " '" << t << "'");
    REQUIRE(t.find(sp, 1) == std::string::npos);
    REQUIRE(std::none_of(t.begin(), t.end(), [](char c) { return c >= 'A' && c <= 'Z'; }));
    n_starts += t.compare(0, sp.size(), sp) == 0;
  }
  CHECK(n_starts > 10000);
  CHECK(v.tokens[999].compare(0, sp.size(), sp) == 0);
  id_of(v, sp + "e");
  id_of(v, "e");
  id_of(v, sp + "the");

  const auto tok = round_trip(v, "bert", "");
  CHECK(tok->vocab().sep_id == 102);
  CHECK(tok->vocab().normalizer_lowercase);
  // The corpus: many distinct pieces, few [UNK] words, and the pieces spell
  // the normalized words back, a space before each.
  const std::string_view corpus = tc::profiler::tokenizer_corpus();
  const auto ids = tok->encode(corpus, {.add_special = false});
  const std::set<TokenId> distinct(ids.begin(), ids.end());
  const auto n_unk = static_cast<size_t>(std::count(ids.begin(), ids.end(), 100));
  INFO(ids.size() << " tokens, " << distinct.size() << " distinct, " << n_unk << " [UNK], for " << corpus.size()
                  << " bytes");
  CHECK(distinct.size() > 3000);
  CHECK(ids.size() * 3 < corpus.size());
  CHECK(n_unk * 1000 < ids.size());
  std::string spelled;  // [UNK] is a control token: its word decodes to nothing
  for (const std::string& w : tc::text::wpm_words(corpus, true, true)) {
    if (tok->encode(w, {.add_special = false}) != std::vector<TokenId>{100}) spelled += " " + w;
  }
  CHECK(tok->decode(ids) == spelled);
  const auto hello = tok->encode("Hello, World!");
  CHECK(hello.front() == 101);
  CHECK(hello.back() == 102);
  CHECK(tok->decode(hello) == " hello , world !");
}

TEST_CASE("charsmap_builder: the double array gives the longest key of random rules", "[profiler][text]") {
  std::mt19937 rng(7);
  const std::string alphabet = "ab\xC3\xA9\xE2\x96\x81 ";  // a, b, e-acute, U+2581, space: shared prefixes
  const auto random_text = [&](size_t max_len) {
    std::string t;
    const size_t n = 1 + rng() % max_len;
    for (size_t i = 0; i < n; ++i) t += alphabet[rng() % alphabet.size()];
    return t;
  };
  for (int round = 0; round < 20; ++round) {
    std::map<std::string, std::string> rules;
    const int n_rules = 1 + static_cast<int>(rng() % 300);
    for (int i = 0; i < n_rules; ++i) rules[random_text(6)] = rng() % 4 == 0 ? std::string() : random_text(4);
    const std::string bytes =
        tc::profiler::build_precompiled_charsmap(tc::profiler::CharsmapRules(rules.begin(), rules.end()));
    const tc::text::PrecompiledCharsmap map(bytes);  // validates every walk
    CHECK((bytes.size() - 4) > 0);
    for (int probe = 0; probe < 200; ++probe) {
      const std::string input = random_text(9);
      size_t want_len = 0;
      std::string want;
      for (const auto& [key, value] : rules) {
        if (input.compare(0, key.size(), key) == 0 && key.size() > want_len) {
          want_len = key.size();
          want = value;
        }
      }
      const auto got = map.longest_match(input);
      INFO("input '" << input << "'");
      CHECK(got.length == want_len);
      CHECK(std::string(got.replacement) == want);
    }
  }
  CHECK(tc::profiler::build_precompiled_charsmap({}).empty());
  CHECK_THROWS_AS(tc::profiler::build_precompiled_charsmap({{"", "x"}}), std::invalid_argument);
  CHECK_THROWS_AS(tc::profiler::build_precompiled_charsmap({{"a", "x"}, {"a", "y"}}), std::invalid_argument);
  CHECK_THROWS_AS(tc::profiler::build_precompiled_charsmap({{std::string("a\0", 2), "x"}}), std::invalid_argument);
}

TEST_CASE("family_vocab: XLM-R-like unigram vocab and its layout and charsmap and pieces", "[profiler][text]") {
  const auto start = std::chrono::steady_clock::now();
  const Vocab v = tc::profiler::make_family_vocab(VocabFamily::Xlmr);
  const double build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN("xlmr vocab built in " << build_seconds << " s");
  REQUIRE(v.n_vocab() == 64000);
  CHECK(tc::profiler::vocab_family_from_name("xlmr") == VocabFamily::Xlmr);
  CHECK(tc::profiler::vocab_family_name(VocabFamily::Xlmr) == "xlmr");
  CHECK(v.kind == tc::text::TokenizerKind::Ugm);
  CHECK(v.pre == "default");
  CHECK(v.tokens[0] == "<s>");
  CHECK(v.tokens[1] == "<pad>");
  CHECK(v.tokens[2] == "</s>");
  CHECK(v.tokens[3] == "<unk>");
  CHECK(v.tokens[63999] == "<mask>");
  for (const TokenId id : {0, 1, 2, 63999}) CHECK(v.types[static_cast<size_t>(id)] == TokenType::Control);
  CHECK(v.types[3] == TokenType::Unknown);
  CHECK(std::count(v.types.begin(), v.types.end(), TokenType::Normal) == 64000 - 5);
  CHECK(v.bos_id == 0);
  CHECK(v.pad_id == 1);
  CHECK(v.eos_id == 2);
  CHECK(v.sep_id == 2);
  CHECK(v.unk_id == 3);
  CHECK(v.mask_id == 63999);
  CHECK(v.add_bos);
  CHECK(v.add_eos);
  CHECK(v.add_space_prefix);
  CHECK(v.remove_extra_whitespaces);
  CHECK(v.merges.empty());
  // Log-probabilities, most likely first.
  CHECK(std::is_sorted(v.scores.begin() + 4, v.scores.end() - 1, std::greater<float>()));
  CHECK(v.scores[4] < 0.0f);
  CHECK(v.scores[4] > -6.0f);
  CHECK(v.scores[63998] > -30.0f);
  const std::string sp = "\xE2\x96\x81";
  id_of(v, sp);
  id_of(v, sp + "the");
  // The charsmap is the builder's, valid, and normalizes as NFKC would.
  const auto rules = tc::profiler::compat_normalization_rules();
  CHECK(rules.size() > 1000);
  REQUIRE(v.precompiled_charsmap == tc::profiler::build_precompiled_charsmap(rules));
  const tc::text::UgmNormalizer norm(v);
  CHECK(norm.normalize("\xEF\xBC\xA8\xEF\xBD\x85llo \xEF\xAC\x81ne  caf" "e\xCC\x81\t\xE2\x91\xA0 ") ==
        sp + "Hello" + sp + "fine" + sp + "caf\xC3\xA9" + sp + "1");
  CHECK(norm.normalize("\xEF\xBD\xB6\xEF\xBE\x9E") == sp + "\xE3\x82\xAC");  // half-width ka + voicing: ga

  const auto tok = round_trip(v, "xlmr", "");
  CHECK(tok->vocab().precompiled_charsmap == v.precompiled_charsmap);
  CHECK(tok->vocab().remove_extra_whitespaces);
  CHECK(tok->vocab().mask_id == 63999);
  const auto hello = tok->encode("Hello, world!");
  CHECK(hello.front() == 0);
  CHECK(hello.back() == 2);
  CHECK(tok->decode(hello) == "Hello, world!");
  CHECK(tok->encode("\xEF\xBC\xA8\xEF\xBD\x85llo,   world! ") == hello);
  // The corpus: many distinct pieces, few <unk>, well under a token per 3 bytes.
  const std::string_view corpus = tc::profiler::tokenizer_corpus();
  const auto ids = tok->encode(corpus, {.add_special = false});
  const std::set<TokenId> distinct(ids.begin(), ids.end());
  const auto n_unk = static_cast<size_t>(std::count(ids.begin(), ids.end(), 3));
  INFO(ids.size() << " tokens, " << distinct.size() << " distinct, " << n_unk << " <unk>, for " << corpus.size()
                  << " bytes");
  CHECK(distinct.size() > 6000);
  CHECK(ids.size() * 3 < corpus.size());
  CHECK(n_unk * 1000 < ids.size());
}
