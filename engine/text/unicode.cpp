// UTF-8 codec, category, lowercase and first-of-NFD lookups over the
// generated range tables, and the GPT-2 byte-level character mapping.
#include "engine/text/unicode.h"

#include <algorithm>
#include <array>

#include "engine/text/unicode_tables.h"

namespace tc::text {

size_t utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;  // continuation byte, or overlong lead C0/C1
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF5) return 4;
  return 0;
}

namespace {

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Allowed range of the byte after `lead` (RFC 3629 table): it excludes
// overlongs (E0, F0), surrogates (ED) and values above U+10FFFF (F4).
bool second_byte_ok(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return is_continuation(b);
  }
}

// Number of bytes of a valid sequence starting at s[pos], 0 when invalid
// (including truncated at the end of `s`).
size_t valid_sequence_length(std::string_view s, size_t pos) {
  const auto lead = static_cast<uint8_t>(s[pos]);
  const size_t n = utf8_sequence_length(lead);
  if (n <= 1) return n;
  if (pos + n > s.size()) return 0;
  if (!second_byte_ok(lead, static_cast<uint8_t>(s[pos + 1]))) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (!is_continuation(static_cast<uint8_t>(s[pos + i]))) return 0;
  }
  return n;
}

}  // namespace

char32_t utf8_decode(std::string_view s, size_t& pos) {
  const size_t n = valid_sequence_length(s, pos);
  const auto b = [&](size_t i) { return static_cast<char32_t>(static_cast<uint8_t>(s[pos + i])); };
  char32_t cpt;
  switch (n) {
    case 1: cpt = b(0); break;
    case 2: cpt = ((b(0) & 0x1F) << 6) | (b(1) & 0x3F); break;
    case 3: cpt = ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F); break;
    case 4:
      cpt = ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
      break;
    default:
      pos += 1;
      return kReplacementChar;
  }
  pos += n;
  return cpt;
}

void utf8_append(std::string& out, char32_t cpt) {
  if ((cpt >= 0xD800 && cpt <= 0xDFFF) || cpt > 0x10FFFF) cpt = kReplacementChar;
  if (cpt < 0x80) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

std::string utf8_encode(char32_t cpt) {
  std::string out;
  utf8_append(out, cpt);
  return out;
}

std::vector<char32_t> utf8_to_codepoints(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) out.push_back(utf8_decode(s, pos));
  return out;
}

bool utf8_is_valid(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const size_t n = valid_sequence_length(s, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

std::string utf8_sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t n = valid_sequence_length(s, pos);
    if (n == 0) {
      utf8_append(out, kReplacementChar);
      pos += 1;
    } else {
      out.append(s.substr(pos, n));
      pos += n;
    }
  }
  return out;
}

size_t utf8_complete_prefix(std::string_view s) {
  // Find the last lead byte within the final 3 bytes and see whether it
  // starts a sequence that is valid so far but runs past the end.
  const size_t size = s.size();
  for (size_t back = 1; back <= 3 && back <= size; ++back) {
    const size_t pos = size - back;
    const auto b = static_cast<uint8_t>(s[pos]);
    if (is_continuation(b)) continue;
    const size_t n = utf8_sequence_length(b);
    if (n <= back) return size;  // complete, ASCII, or an invalid lead
    if (back >= 2 && !second_byte_ok(b, static_cast<uint8_t>(s[pos + 1]))) return size;
    for (size_t i = 2; i < back; ++i) {
      if (!is_continuation(static_cast<uint8_t>(s[pos + i]))) return size;
    }
    return pos;
  }
  return size;
}

Category category(char32_t cpt) {
  static const std::array<uint8_t, 128> ascii = [] {
    std::array<uint8_t, 128> t{};
    for (char32_t c = 0; c < 128; ++c) {
      const uint32_t key = (static_cast<uint32_t>(c) << 3) | 7u;
      const uint32_t* end = tables::kCategoryRanges + tables::kCategoryRangeCount;
      const uint32_t* it = std::upper_bound(tables::kCategoryRanges, end, key);
      t[c] = static_cast<uint8_t>(*(it - 1) & 7u);
    }
    return t;
  }();
  if (cpt < 128) return static_cast<Category>(ascii[cpt]);
  if (cpt > 0x10FFFF) return Category::Unassigned;
  // Largest entry whose start <= cpt: search for the first start > cpt.
  const uint32_t key = (static_cast<uint32_t>(cpt) << 3) | 7u;
  const uint32_t* end = tables::kCategoryRanges + tables::kCategoryRangeCount;
  const uint32_t* it = std::upper_bound(tables::kCategoryRanges, end, key);
  return static_cast<Category>(*(it - 1) & 7u);
}

bool is_whitespace(char32_t cpt) {
  for (size_t i = 0; i < tables::kWhiteSpaceRangeCount; ++i) {
    if (cpt < tables::kWhiteSpaceRanges[i][0]) return false;
    if (cpt <= tables::kWhiteSpaceRanges[i][1]) return true;
  }
  return false;
}

char32_t to_lower(char32_t cpt) {
  if (cpt < 0x80) return (cpt >= 'A' && cpt <= 'Z') ? cpt + 32 : cpt;
  const tables::CaseRun* end = tables::kLowercaseRuns + tables::kLowercaseRunCount;
  const tables::CaseRun* it = std::upper_bound(tables::kLowercaseRuns, end, static_cast<uint32_t>(cpt),
                                               [](uint32_t c, const tables::CaseRun& r) { return c < r.first; });
  if (it == tables::kLowercaseRuns) return cpt;
  --it;
  if (cpt > it->last || (cpt - it->first) % it->stride != 0) return cpt;
  return static_cast<char32_t>(static_cast<int64_t>(cpt) + it->delta);
}

char32_t nfd_first(char32_t cpt) {
  if (cpt < 0xC0) return cpt;  // nothing below A-grave decomposes
  const tables::ValueRange* end = tables::kNfdFirstRanges + tables::kNfdFirstRangeCount;
  const tables::ValueRange* it = std::upper_bound(tables::kNfdFirstRanges, end, static_cast<uint32_t>(cpt),
                                                  [](uint32_t c, const tables::ValueRange& r) { return c < r.first; });
  if (it == tables::kNfdFirstRanges) return cpt;
  --it;
  return cpt <= it->last ? static_cast<char32_t>(it->value) : cpt;
}

bool is_bert_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

const char* unicode_version() { return tables::kUnicodeVersion; }

namespace {

struct ByteTables {
  std::array<char32_t, 256> to_cpt{};
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 512> from_cpt{};  // byte chars all lie below U+0144
};

const ByteTables& byte_tables() {
  static const ByteTables t = [] {
    ByteTables bt;
    bt.from_cpt.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t cpt = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      bt.to_cpt[b] = cpt;
      bt.to_utf8[b] = utf8_encode(cpt);
      bt.from_cpt[cpt] = static_cast<int16_t>(b);
    }
    return bt;
  }();
  return t;
}

}  // namespace

char32_t byte_to_unicode(uint8_t byte) { return byte_tables().to_cpt[byte]; }
std::string_view byte_to_unicode_utf8(uint8_t byte) { return byte_tables().to_utf8[byte]; }
int unicode_to_byte(char32_t cpt) {
  return cpt < 512 ? byte_tables().from_cpt[cpt] : -1;
}

}  // namespace tc::text
