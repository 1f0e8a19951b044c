// The pre-tokenizer names and flags as llama.cpp's llama_vocab::load maps
// them, the regex pass lists per type (llm_tokenizer_bpe's regex_exprs), and
// the matcher pieces the family files share. The matchers have the
// semantics llama.cpp gets: leftmost-first alternatives with backtracking,
// over codepoints classed as its collapsed-regex trick classes them (ASCII
// exact, anything else by category only).
#include "engine/text/pre_tokenizer.h"

#include <array>
#include <span>
#include <string>

#include "engine/text/pre_tokenizer_detail.h"
#include "engine/text/unicode.h"

namespace tc::text {

namespace {

struct NamedPreTokenizer {
  std::string_view name;
  PreTokenizer pre;
};

// llama_vocab::load's name chain, in its order ("gpt2" is ours).
constexpr NamedPreTokenizer kNames[] = {
    {"default", PreTokenizer::Default},
    {"minicpm5", PreTokenizer::MiniCpm5},
    {"llama3", PreTokenizer::Llama3},
    {"llama-v3", PreTokenizer::Llama3},
    {"llama-bpe", PreTokenizer::Llama3},
    {"falcon3", PreTokenizer::Llama3},
    {"falcon-h1", PreTokenizer::Llama3},
    {"pixtral", PreTokenizer::Llama3},
    {"midm-2.0", PreTokenizer::Llama3},
    {"lfm2", PreTokenizer::Llama3},
    {"jina-v5-nano", PreTokenizer::Llama3},
    {"deepseek-llm", PreTokenizer::DeepseekLlm},
    {"deepseek-coder", PreTokenizer::DeepseekCoder},
    {"deepseek-v3", PreTokenizer::Deepseek3},
    {"youtu", PreTokenizer::Youtu},
    {"falcon", PreTokenizer::Falcon},
    {"mpt", PreTokenizer::Gpt2},
    {"starcoder", PreTokenizer::Starcoder},
    {"gpt2", PreTokenizer::Gpt2},
    {"gpt-2", PreTokenizer::Gpt2},
    {"phi-2", PreTokenizer::Gpt2},
    {"jina-es", PreTokenizer::Gpt2},
    {"jina-de", PreTokenizer::Gpt2},
    {"gigachat", PreTokenizer::Gpt2},
    {"jina-v2-es", PreTokenizer::Gpt2},
    {"jina-v2-de", PreTokenizer::Gpt2},
    {"a.x-4.0", PreTokenizer::Gpt2},
    {"mellum", PreTokenizer::Gpt2},
    {"modern-bert", PreTokenizer::Gpt2},
    {"jais-2", PreTokenizer::Jais2},
    {"gemma4", PreTokenizer::Gemma4},
    {"granite-embed-multi-311m", PreTokenizer::Gemma4},
    {"jina-v1-en", PreTokenizer::Gpt2},
    {"jina-v2-code", PreTokenizer::Gpt2},
    {"roberta-bpe", PreTokenizer::Gpt2},
    {"refact", PreTokenizer::Starcoder},
    {"command-r", PreTokenizer::Starcoder},
    {"qwen2", PreTokenizer::Qwen2},
    {"deepseek-r1-qwen", PreTokenizer::Qwen2},
    {"kormo", PreTokenizer::Qwen2},
    {"f2llmv2", PreTokenizer::Qwen2},
    {"qwen35", PreTokenizer::Qwen35},
    {"stablelm2", PreTokenizer::Qwen2},
    {"olmo", PreTokenizer::Gpt2},
    {"dbrx", PreTokenizer::Dbrx},
    {"smaug-bpe", PreTokenizer::Dbrx},
    {"poro-chat", PreTokenizer::Bloom},
    {"glm4", PreTokenizer::ChatGlm4},
    {"chatglm-bpe", PreTokenizer::ChatGlm4},
    {"viking", PreTokenizer::Viking},
    {"jais", PreTokenizer::Gpt2},
    {"tekken", PreTokenizer::Tekken},
    {"smollm", PreTokenizer::Starcoder},
    {"codeshell", PreTokenizer::Starcoder},
    {"bloom", PreTokenizer::Bloom},
    {"gpt3-finnish", PreTokenizer::Bloom},
    {"exaone", PreTokenizer::Starcoder},
    {"exaone4", PreTokenizer::Gpt2},
    {"exaone-moe", PreTokenizer::ExaoneMoe},
    {"chameleon", PreTokenizer::Chameleon},
    {"minerva-7b", PreTokenizer::Starcoder},
    {"megrez", PreTokenizer::Qwen2},
    {"gpt-4o", PreTokenizer::Gpt4o},
    {"llama4", PreTokenizer::Gpt4o},
    {"kanana2", PreTokenizer::Gpt4o},
    {"talkie", PreTokenizer::Gpt4o},
    {"granite-embed-multi-97m", PreTokenizer::GraniteEmbMulti},
    {"tiny_aya", PreTokenizer::TinyAya},
    {"cohere2moe", PreTokenizer::TinyAya},
    {"superbpe", PreTokenizer::SuperBpe},
    {"trillion", PreTokenizer::Gpt2},
    {"granite-docling", PreTokenizer::Gpt2},
    {"bailingmoe", PreTokenizer::Qwen2},
    {"bailingmoe2", PreTokenizer::Qwen2},
    {"llada-moe", PreTokenizer::Qwen2},
    {"seed-coder", PreTokenizer::SeedCoder},
    {"hunyuan", PreTokenizer::Qwen2},
    {"hunyuan-dense", PreTokenizer::Deepseek3},
    {"joyai-llm", PreTokenizer::Deepseek3},
    {"kimi-k2", PreTokenizer::KimiK2},
    {"grok-2", PreTokenizer::Qwen2},
    {"afmoe", PreTokenizer::Afmoe},
    {"laguna", PreTokenizer::Laguna},
    {"minimax-m2", PreTokenizer::Gpt4o},
    {"solar-open", PreTokenizer::Qwen2},
    {"mellum2", PreTokenizer::Starcoder},
};

struct RefusedPreTokenizer {
  std::string_view name;
  std::string_view reason;
};

// Names llama.cpp accepts whose BPE runs over raw UTF-8 (byte_encode off)
// in ways Tokenizer does not (it runs Gemma 4's only).
constexpr RefusedPreTokenizer kRefused[] = {
    {"sarvam-moe",
     "is SentencePiece-style BPE over raw UTF-8 with spaces escaped to U+2581 (llama.cpp's byte_encode "
     "off) without Gemma 4's newline and BOS rules; Thermocline runs only Gemma 4's (\"gemma4\")"},
    {"whitespace",
     "splits on \\S+ and runs BPE over raw UTF-8 (llama.cpp's byte_encode off); Thermocline's BPE runs "
     "byte-level vocabularies and Gemma 4's (\"gemma4\") only"},
};

}  // namespace

std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view name) {
  if (name.empty()) return PreTokenizer::Default;
  for (const auto& n : kNames) {
    if (n.name == name) return n.pre;
  }
  return std::nullopt;
}

std::string_view pre_tokenizer_refusal(std::string_view name) {
  for (const auto& r : kRefused) {
    if (r.name == name) return r.reason;
  }
  return {};
}

std::string_view supported_pre_tokenizer_names() {
  static const std::string names = [] {
    std::string s;
    for (const auto& n : kNames) {
      if (!s.empty()) s += ", ";
      s += '"';
      s += n.name;
      s += '"';
    }
    return s;
  }();
  return names;
}

bool pre_tokenizer_ignores_merges(PreTokenizer pre) {
  switch (pre) {
    case PreTokenizer::Llama3:
    case PreTokenizer::MiniCpm5:
    case PreTokenizer::Youtu:
    case PreTokenizer::Tekken:
    case PreTokenizer::GraniteEmbMulti:
      return true;
    default:
      return false;
  }
}

bool pre_tokenizer_default_add_bos(PreTokenizer pre) {
  return pre == PreTokenizer::Llama3 || pre == PreTokenizer::Tekken || pre == PreTokenizer::Chameleon ||
         pre == PreTokenizer::Gemma4;
}

bool pre_tokenizer_has_default_bos(PreTokenizer pre) { return pre != PreTokenizer::ChatGlm4; }

namespace detail {

Codepoints decode_codepoints(std::string_view text) {
  Codepoints c;
  c.cpts.reserve(text.size());
  c.flags.reserve(text.size());
  c.byte_offset.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    c.byte_offset.push_back(pos);
    const char32_t cpt = utf8_decode(text, pos);
    uint8_t f = 0;
    switch (category(cpt)) {
      case Category::Letter: f = kLetter; break;
      case Category::Number: f = kNumber; break;
      case Category::Punctuation: f = kPunct; break;
      case Category::Symbol: f = kSymbol; break;
      case Category::Mark: f = kMark; break;
      default: break;
    }
    // llama.cpp checks whitespace before the category: a White_Space
    // codepoint is only that.
    if (is_whitespace(cpt)) f = kSpace;
    c.cpts.push_back(cpt);
    c.flags.push_back(f);
  }
  c.byte_offset.push_back(text.size());
  return c;
}

size_t contraction(const Span& s, size_t pos, bool ignore_case) {
  if (s.cpt(pos) != '\'') return 0;
  const auto lower = [&](char32_t c) { return (ignore_case && is_ascii_upper(c)) ? c + ('a' - 'A') : c; };
  const char32_t c1 = lower(s.cpt(pos + 1));
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  const char32_t c2 = lower(s.cpt(pos + 2));
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

size_t space_word(const Span& s, size_t pos) {
  size_t end = pos;
  size_t last_newline_end = 0;
  while (s.space(end)) {
    if (is_newline(s.cpt(end))) last_newline_end = end + 1;
    ++end;
  }
  if (end == pos) return pos;
  if (last_newline_end > 0) return last_newline_end;  // \s*[\r\n]+
  if (end - pos > 1 && end < s.end()) return end - 1;  // \s+(?!\S) leaves one space
  return end;                                          // \s+
}

size_t other_word(const Span& s, size_t pos, OtherTail tail, bool tail_repeats, bool exclude_marks) {
  const auto in_run = [&](size_t p) { return s.other(p) && !(exclude_marks && s.has(p, kMark)); };
  const size_t q = pos + (s.cpt(pos) == ' ' ? 1 : 0);
  if (!in_run(q)) return pos;
  size_t p = s.run_end(q, in_run);
  const auto in_tail = [&](size_t i) {
    const char32_t c = s.cpt(i);
    return tail != OtherTail::kNone && (is_newline(c) || (tail == OtherTail::kNewlinesSlash && c == '/'));
  };
  if (tail_repeats) {
    p = s.run_end(p, in_tail);
  } else if (in_tail(p)) {
    ++p;
  }
  return p;
}

void split_number_runs(Span& s) {
  split_runs(s, [&](size_t p) { return s.number(p); }, SIZE_MAX);
}

void split_each_number(Span& s) {
  split_runs(s, [&](size_t p) { return s.number(p); }, 1);
}

void split_number_triples(Span& s) {
  split_runs(s, [&](size_t p) { return s.number(p); }, 3);
}

void split_digits_from_right(Span& s) {
  for (size_t p = s.begin(); p < s.end();) {
    if (!s.number(p)) {
      ++p;
      continue;
    }
    const size_t run_end = s.run_end(p, [&](size_t i) { return s.number(i); });
    size_t cut = p + (run_end - p) % 3;
    if (cut > p) s.emit(cut);
    for (; cut < run_end; cut += 3) s.emit(cut + 3);
    p = run_end;
  }
  s.emit(s.end());
}

}  // namespace detail

namespace {

using namespace detail;

// Applies `pass` to every current word, producing the refined word lengths.
std::vector<size_t> refine(const Codepoints& c, const std::vector<size_t>& lengths, Pass pass) {
  std::vector<size_t> out;
  out.reserve(lengths.size() * 2);
  size_t start = 0;
  for (const size_t len : lengths) {
    Span s(c, start, start + len, out);
    pass(s);
    start += len;
  }
  return out;
}

template <size_t N>
std::span<const Pass> passes_of(const std::array<Pass, N>& a) {
  return {a.data(), a.size()};
}

// llm_tokenizer_bpe's regex_exprs for each type, in order.
std::span<const Pass> passes(PreTokenizer pre) {
  static constexpr std::array<Pass, 4> kDefault = {split_default_punct, split_gpt2, split_number_runs,
                                                   split_digit_triples};
  static constexpr std::array<Pass, 1> kGpt2 = {split_gpt2};
  static constexpr std::array<Pass, 1> kLlama3 = {split_llama3};
  static constexpr std::array<Pass, 1> kJais2 = {split_jais2};
  static constexpr std::array<Pass, 1> kQwen2 = {split_qwen2};
  static constexpr std::array<Pass, 1> kQwen35 = {split_qwen35};
  static constexpr std::array<Pass, 1> kSeedCoder = {split_seed_coder};
  static constexpr std::array<Pass, 2> kMiniCpm5 = {split_number_triples, split_minicpm5_words};
  static constexpr std::array<Pass, 1> kExaoneMoe = {split_exaone_moe};
  static constexpr std::array<Pass, 2> kLaguna = {split_newline_runs, split_qwen2};
  static constexpr std::array<Pass, 1> kTekken = {split_tekken};
  static constexpr std::array<Pass, 1> kGpt4o = {split_gpt4o};
  static constexpr std::array<Pass, 1> kGraniteEmbMulti = {split_granite_emb_multi};
  static constexpr std::array<Pass, 2> kTinyAya = {split_digits_from_right, split_tiny_aya_words};
  static constexpr std::array<Pass, 2> kYoutu = {split_youtu_scripts, split_youtu_words};
  static constexpr std::array<Pass, 1> kKimiK2 = {split_kimi_k2};
  static constexpr std::array<Pass, 6> kDeepseekLlm = {split_each_newline,        split_deepseek_llm_letters,
                                                       split_deepseek_llm_punct,  split_trailing_space,
                                                       split_deepseek_cjk_hangul, split_number_runs};
  static constexpr std::array<Pass, 5> kDeepseekCoder = {split_each_newline, split_space_letters,
                                                         split_space_punct, split_deepseek_cjk_hangul,
                                                         split_each_number};
  static constexpr std::array<Pass, 3> kDeepseek3 = {split_number_triples, split_cjk_kana,
                                                     split_deepseek3_words};
  static constexpr std::array<Pass, 3> kAfmoe = {split_digits_from_right, split_afmoe_scripts,
                                                 split_deepseek3_words};
  static constexpr std::array<Pass, 3> kFalcon = {split_falcon_punct, split_gpt2, split_digit_triples};
  static constexpr std::array<Pass, 2> kStarcoder = {split_each_number, split_gpt2};
  static constexpr std::array<Pass, 6> kChameleon = {split_chameleon_sentinels, split_chameleon_images,
                                                     split_chameleon_whitespace, split_each_number,
                                                     split_chameleon_punct, split_gpt2};
  static constexpr std::array<Pass, 1> kBloom = {split_bloom};
  static constexpr std::array<Pass, 2> kViking = {split_bloom, split_each_number};
  static constexpr std::array<Pass, 2> kSuperBpe = {split_number_runs, split_superbpe_digits};
  static constexpr std::array<Pass, 1> kGemma4 = {split_newline_runs};

  switch (pre) {
    case PreTokenizer::Default: return passes_of(kDefault);
    case PreTokenizer::Gpt2: return passes_of(kGpt2);
    case PreTokenizer::Llama3:
    case PreTokenizer::Dbrx:
    case PreTokenizer::ChatGlm4: return passes_of(kLlama3);
    case PreTokenizer::Jais2: return passes_of(kJais2);
    case PreTokenizer::Qwen2: return passes_of(kQwen2);
    case PreTokenizer::Qwen35: return passes_of(kQwen35);
    case PreTokenizer::SeedCoder: return passes_of(kSeedCoder);
    case PreTokenizer::MiniCpm5: return passes_of(kMiniCpm5);
    case PreTokenizer::ExaoneMoe: return passes_of(kExaoneMoe);
    case PreTokenizer::Laguna: return passes_of(kLaguna);
    case PreTokenizer::Tekken: return passes_of(kTekken);
    case PreTokenizer::Gpt4o: return passes_of(kGpt4o);
    case PreTokenizer::GraniteEmbMulti: return passes_of(kGraniteEmbMulti);
    case PreTokenizer::TinyAya: return passes_of(kTinyAya);
    case PreTokenizer::Youtu: return passes_of(kYoutu);
    case PreTokenizer::KimiK2: return passes_of(kKimiK2);
    case PreTokenizer::DeepseekLlm: return passes_of(kDeepseekLlm);
    case PreTokenizer::DeepseekCoder: return passes_of(kDeepseekCoder);
    case PreTokenizer::Deepseek3: return passes_of(kDeepseek3);
    case PreTokenizer::Afmoe: return passes_of(kAfmoe);
    case PreTokenizer::Falcon: return passes_of(kFalcon);
    case PreTokenizer::Starcoder: return passes_of(kStarcoder);
    case PreTokenizer::Chameleon: return passes_of(kChameleon);
    case PreTokenizer::Bloom: return passes_of(kBloom);
    case PreTokenizer::Viking: return passes_of(kViking);
    case PreTokenizer::SuperBpe: return passes_of(kSuperBpe);
    case PreTokenizer::Gemma4: return passes_of(kGemma4);
  }
  return passes_of(kDefault);
}

}  // namespace

std::vector<std::string_view> pre_tokenize(PreTokenizer pre, std::string_view text) {
  if (text.empty()) return {};
  const Codepoints c = decode_codepoints(text);
  std::vector<size_t> lengths{c.cpts.size()};
  for (const Pass pass : passes(pre)) lengths = refine(c, lengths, pass);
  std::vector<std::string_view> words;
  words.reserve(lengths.size());
  size_t start = 0;
  for (const size_t len : lengths) {
    const size_t b0 = c.byte_offset[start];
    const size_t b1 = c.byte_offset[start + len];
    words.push_back(text.substr(b0, b1 - b0));
    start += len;
  }
  return words;
}

}  // namespace tc::text
