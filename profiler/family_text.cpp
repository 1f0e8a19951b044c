// family_training_text: the shipped corpus plus seeded synthetic text in
// many scripts, so that vocabularies of 150k-260k tokens have enough
// distinct words to learn real merges from (the corpus alone runs out).
// Words are built from per-script syllable inventories; word frequencies
// follow Zipf's law, and a word list holds every generated word once.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/text/unicode.h"
#include "profiler/family_vocab.h"
#include "engine/runtime/rng.h"
#include "profiler/tokenizer_corpus.h"

namespace tc::profiler {
namespace {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() { return runtime::splitmix64(state_); }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// Draws indices 0..n-1 with P(i) proportional to 1 / (i + 1)^s.
class Zipf {
 public:
  Zipf(size_t n, double s) : cdf_(n) {
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) {
      total += 1.0 / std::pow(static_cast<double>(i + 1), s);
      cdf_[i] = total;
    }
    for (double& c : cdf_) c /= total;
  }
  size_t draw(Rng& rng) const {
    const auto it = std::lower_bound(cdf_.begin(), cdf_.end(), rng.unit());
    return std::min(static_cast<size_t>(it - cdf_.begin()), cdf_.size() - 1);
  }

 private:
  std::vector<double> cdf_;
};

std::vector<std::string> chars_in(char32_t first, char32_t last) {
  std::vector<std::string> out;
  for (char32_t c = first; c <= last; ++c) out.push_back(text::utf8_encode(c));
  return out;
}

std::vector<std::string> split_words(std::string_view list) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < list.size();) {
    const size_t end = std::min(list.find(' ', pos), list.size());
    if (end > pos) out.emplace_back(list.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// Every onset+nucleus string, onsets alone when `nuclei` is empty.
std::vector<std::string> syllables(const std::vector<std::string>& onsets, const std::vector<std::string>& nuclei) {
  if (nuclei.empty()) return onsets;
  std::vector<std::string> out;
  for (const auto& o : onsets) {
    for (const auto& n : nuclei) out.push_back(o + n);
  }
  return out;
}

struct Script {
  std::vector<std::string> syllables;  // drawn by Zipf in a seeded order
  int min_syllables;
  int max_syllables;
  size_t n_words;        // lexicon size
  size_t n_running;      // words of running text
  bool spaced;           // words separated by spaces
  bool capitalized;      // sentences start with an upper-case ASCII letter
  std::string_view comma;
  std::string_view stop;
};

std::vector<Script> scripts() {
  std::vector<Script> s;
  // Latin, with some diacritics.
  s.push_back({syllables(split_words("b c d f g h j k l m n p r s t v w z st tr ch sh th pr gr br kl sp"),
                         split_words("a e i o u ou ea ai ie \xC3\xA9 \xC3\xBC \xC3\xB6 \xC3\xA4 \xC3\xA8")),
               1, 4, 24000, 120000, true, true, ",", "."});
  // Cyrillic.
  s.push_back({syllables(split_words("\xD0\xB1 \xD0\xB2 \xD0\xB3 \xD0\xB4 \xD0\xB6 \xD0\xB7 \xD0\xBA \xD0\xBB "
                                     "\xD0\xBC \xD0\xBD \xD0\xBF \xD1\x80 \xD1\x81 \xD1\x82 \xD1\x84 \xD1\x85 "
                                     "\xD1\x86 \xD1\x87 \xD1\x88 \xD1\x89"),
                         split_words("\xD0\xB0 \xD0\xB5 \xD0\xB8 \xD0\xBE \xD1\x83 \xD1\x8B \xD1\x8D \xD1\x8E "
                                     "\xD1\x8F")),
               1, 4, 10000, 50000, true, false, ",", "."});
  // Greek.
  s.push_back({syllables(split_words("\xCE\xB2 \xCE\xB3 \xCE\xB4 \xCE\xB6 \xCE\xB8 \xCE\xBA \xCE\xBB \xCE\xBC "
                                     "\xCE\xBD \xCE\xBE \xCF\x80 \xCF\x81 \xCF\x83 \xCF\x84 \xCF\x86 \xCF\x87"),
                         split_words("\xCE\xB1 \xCE\xB5 \xCE\xB7 \xCE\xB9 \xCE\xBF \xCF\x85 \xCF\x89 \xCE\xAC "
                                     "\xCE\xAD \xCE\xAF \xCF\x8C")),
               1, 4, 3000, 15000, true, false, ",", "."});
  // Arabic (letters only, no vowel marks).
  {
    auto letters = chars_in(0x0628, 0x063A);
    const auto more = chars_in(0x0641, 0x064A);
    letters.insert(letters.end(), more.begin(), more.end());
    s.push_back({letters, 2, 6, 4000, 20000, true, false, "\xD8\x8C", "."});
  }
  // Devanagari: consonant + optional vowel sign or virama.
  {
    auto signs = chars_in(0x093E, 0x094D);
    signs.push_back("");
    s.push_back({syllables(chars_in(0x0915, 0x0939), signs), 1, 4, 3000, 15000, true, false, ",",
                 "\xE0\xA5\xA4"});
  }
  // Thai: consonant + optional vowel; no spaces between words.
  {
    auto vowels = chars_in(0x0E30, 0x0E39);
    vowels.push_back("");
    s.push_back({syllables(chars_in(0x0E01, 0x0E2E), vowels), 1, 3, 2000, 12000, false, false, " ", " "});
  }
  // Hangul syllables.
  s.push_back({chars_in(0xAC00, 0xD7A3), 1, 4, 6000, 30000, true, false, ",", "."});
  // CJK ideographs: words of 1-3 characters, no spaces.
  s.push_back({chars_in(0x4E00, 0x9FFF), 1, 3, 12000, 60000, false, false, "\xEF\xBC\x8C", "\xE3\x80\x82"});
  // Kana.
  {
    auto kana = chars_in(0x3041, 0x3093);
    const auto katakana = chars_in(0x30A1, 0x30F3);
    kana.insert(kana.end(), katakana.begin(), katakana.end());
    s.push_back({kana, 2, 5, 3000, 15000, false, false, "\xE3\x80\x81", "\xE3\x80\x82"});
  }
  return s;
}

// Up to script.n_words distinct words of the script, in a seeded order
// (the order is their frequency rank in the running text).
std::vector<std::string> make_lexicon(const Script& script, Rng& rng) {
  // Syllables take a seeded order so that Zipf favours different ones per seed.
  std::vector<size_t> order(script.syllables.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(static_cast<uint32_t>(i))]);
  const Zipf pick(order.size(), 0.9);
  std::vector<std::string> words;
  std::unordered_set<std::string> seen;
  const auto span = static_cast<uint32_t>(script.max_syllables - script.min_syllables + 1);
  for (size_t attempts = 0; words.size() < script.n_words && attempts < script.n_words * 20; ++attempts) {
    const int n = script.min_syllables + static_cast<int>(rng.below(span));
    std::string w;
    for (int k = 0; k < n; ++k) w += script.syllables[order[pick.draw(rng)]];
    if (seen.insert(w).second) words.push_back(std::move(w));
  }
  return words;
}

void append_capitalized(std::string& out, const std::string& word, bool capitalize) {
  const size_t start = out.size();
  out += word;
  if (capitalize && !word.empty() && word[0] >= 'a' && word[0] <= 'z') out[start] = static_cast<char>(word[0] - 32);
}

// Running text: sentences of Zipf-drawn words with punctuation, a paragraph
// break now and then.
void append_running_text(std::string& out, const Script& script, const std::vector<std::string>& lexicon,
                         Rng& rng) {
  const Zipf pick(lexicon.size(), 1.0);
  bool sentence_start = true;
  bool line_start = true;
  for (size_t i = 0; i < script.n_running; ++i) {
    if (!line_start && script.spaced) out += ' ';
    append_capitalized(out, lexicon[pick.draw(rng)], sentence_start && script.capitalized);
    sentence_start = line_start = false;
    const uint32_t r = rng.below(100);
    if (r < 8) {
      out += script.comma;
    } else if (r < 14) {
      out += script.stop;
      sentence_start = true;
      if (rng.below(8) == 0) {
        out += "\n\n";
        line_start = true;
      }
    }
  }
  out += "\n\n";
}

// Code-like lines: indentation, identifiers from the Latin lexicon in snake
// and camel case, calls, operators and numbers.
void append_code(std::string& out, const std::vector<std::string>& latin, size_t n_lines, Rng& rng) {
  static constexpr std::string_view kOps[] = {" = ", " + ", " - ", " * ", " / ", " == ", " != ", " < ", " >= ",
                                              " && ", " || ", " -> ", "::", ".", ", "};
  static constexpr std::string_view kKeywords[] = {"if ", "for ", "while ", "return ", "let ", "const ",
                                                   "def ", "fn ", "auto ", "int ", "else ", ""};
  const Zipf pick(std::min<size_t>(latin.size(), 5000), 1.0);
  const auto ident = [&] {
    std::string id = latin[pick.draw(rng)];
    const uint32_t style = rng.below(3);
    if (style > 0) {
      std::string second = latin[pick.draw(rng)];
      if (style == 2 && !second.empty() && second[0] >= 'a' && second[0] <= 'z') second[0] = static_cast<char>(second[0] - 32);
      id += (style == 1 ? "_" : "") + second;
    }
    return id;
  };
  for (size_t line = 0; line < n_lines; ++line) {
    const uint32_t depth = rng.below(5);
    out += rng.below(6) == 0 ? std::string(depth, '\t') : std::string(depth * 4, ' ');
    out += kKeywords[rng.below(std::size(kKeywords))];
    out += ident();
    const uint32_t n_terms = rng.below(4);
    for (uint32_t t = 0; t < n_terms; ++t) {
      out += kOps[rng.below(std::size(kOps))];
      out += rng.below(4) == 0 ? std::to_string(rng.below(100000)) : ident();
    }
    if (rng.below(3) == 0) out.append("(").append(ident()).append(")");  // not "(" + s: GCC 12's -Wrestrict false positive
    out += rng.below(2) == 0 ? ";" : (rng.below(2) == 0 ? ":" : " {");
    out += '\n';
  }
  out += '\n';
}

}  // namespace

std::string family_training_text(uint64_t seed) {
  Rng rng(seed ^ 0x7F4A7C159E3779B9ull);
  std::string out(tokenizer_corpus());
  out += "\n\n";
  std::vector<std::string> latin;
  for (const Script& script : scripts()) {
    const std::vector<std::string> lexicon = make_lexicon(script, rng);
    append_running_text(out, script, lexicon, rng);
    // The word list: every word once, so rare words are there to merge.
    for (size_t i = 0; i < lexicon.size(); ++i) {
      out += lexicon[i];
      out += (i % 12 == 11) ? "\n" : " ";
    }
    out += "\n\n";
    if (latin.empty()) latin = lexicon;
  }
  append_code(out, latin, 15000, rng);
  for (int i = 0; i < 8000; ++i) {
    out += std::to_string(rng.next() % 100000000u);
    out += rng.below(5) == 0 ? "\n" : " ";
  }
  return out;
}

}  // namespace tc::profiler
