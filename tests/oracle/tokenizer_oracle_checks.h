// The comparisons the tokenizer oracle tests make between our Tokenizer and
// llama.cpp's (LlamaVocab) on one vocab: the texts they tokenize (corpus
// lines, a corpus slice, seeded random mixes of tricky fragments), and
// Catch2 CHECKs that token ids, pieces and detokenized text agree, with the
// first few differences shown.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tokenizer.h"
#include "tests/oracle/llama_tokenizer_oracle.h"

namespace tc::oracle {

// Bytes as a C string literal body for messages: printable ASCII as is,
// the rest escaped; cut after max_bytes with the length noted.
std::string escape_bytes(std::string_view s, size_t max_bytes = 160);

// profiler/data/tokenizer_corpus.txt
const std::string& tokenizer_corpus_text();

// Every corpus line, a 20000-byte slice of the corpus cut at a character
// boundary, then `n_random` seeded concatenations of 0..max_fragments-1
// fragments (the built-in list plus `extra_fragments`). All valid UTF-8.
std::vector<std::string> oracle_texts(int n_random, int max_fragments, uint32_t seed,
                                      const std::vector<std::string>& extra_fragments = {});

// REQUIREs every text to be valid UTF-8 (invalid input is a documented
// difference: we replace it by U+FFFD, llama.cpp passes the bytes on).
void require_valid_utf8(const std::vector<std::string>& texts);

// Token ids from both in three modes (specials added or not, special texts
// parsed): CHECKs that none differ.
void check_encodings(const LlamaVocab& ref, const text::Tokenizer& ours, const std::vector<std::string>& texts);

// The piece of every token id from both, special rendering off and on.
void check_pieces(const LlamaVocab& ref, const text::Tokenizer& ours);

// Our decode against llama_detokenize (remove_special off) of our ids for
// each text, special rendering off and on, and that each text decodes back
// from its ids (special texts not parsed; SPM and Gemma 4 texts with a
// literal U+2581 left out; not for WPM and UGM, whose normalizers are
// lossy). With a space prefix, ours is compared with llama.cpp's way of
// stripping it (from the very first token's piece only: a BOS in front
// keeps the text's leading space there, where our decode drops it).
// `llama_cleans_spaces`: the vocab is one llama.cpp detokenizes with its
// clean_spaces step (Gemma 4's, WPM's), which our decode leaves out on
// purpose: ours is compared with that step applied.
void check_detokenize(const LlamaVocab& ref, const text::Tokenizer& ours, const std::vector<std::string>& texts,
                      bool llama_cleans_spaces = false);

// llama_detokenize's clean_spaces step: " ?", " !", " .", " ," lose the
// space, " ' " both spaces, " 's", " 'm", " 're", " 've" the space.
std::string llama_clean_spaces(std::string text);

// llama_vocab_is_eog against Vocab::is_end_of_generation for every id, and
// (with `expect_some`: not for a BERT vocab, which has no EOS) that some id
// ends generation.
void check_end_of_generation(const LlamaVocab& ref, const text::Tokenizer& ours, bool expect_some = true);

}  // namespace tc::oracle
