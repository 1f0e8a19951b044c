// Precompiled charsmaps for generated UGM ("t5") vocabs: a builder of the
// XOR-compressed double array llama.cpp reads from
// `tokenizer.ggml.precompiled_charsmap` (layout in engine/text/charsmap.h),
// and an NFKC-like normalization map in the spirit of SentencePiece's
// nmt_nfkc to compile with it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tc::profiler {

// (key, replacement) byte strings.
using CharsmapRules = std::vector<std::pair<std::string, std::string>>;

// The charsmap bytes for `rules`: keys non-empty, distinct and without NUL
// bytes, replacements without NUL bytes (std::invalid_argument otherwise).
// Replacement strings are stored once each. The double array is a multiple
// of 256 units, so every walk stays inside it; empty rules give "".
// Deterministic.
std::string build_precompiled_charsmap(const CharsmapRules& rules);

// An NFKC-like map, each entry what Unicode's NFKC gives for it (checked
// with Python's unicodedata when written) unless said otherwise:
// full-width ASCII and the ideographic space, half-width katakana (and
// katakana + a half-width voicing mark composed), ligatures, digraphs,
// super- and subscripts, vulgar fractions, Roman numerals, circled and
// parenthesized numbers and letters, mathematical bold, italic, sans-serif
// and monospace letters and digits, letter-like symbols, squared CJK units,
// CJK compatibility ideographs; base letter + combining mark sequences
// composed (Latin-1 and caron letters); and, as SentencePiece's nmt_nfkc
// does (not NFKC), tab, line breaks and other Unicode spaces made ' ', C0
// and C1 controls (but NUL), U+200B and U+FEFF removed.
CharsmapRules compat_normalization_rules();

}  // namespace tc::profiler
