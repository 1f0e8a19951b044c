// Tokenizer vocabularies laid out as five model families' GGUF files carry
// them, for tests and benchmarks: BERT-like (WordPiece,
// bert-base-uncased's 30,522 tokens), XLM-RoBERTa-like (SentencePiece
// unigram with a precompiled charsmap, 64,000 tokens, not XLM-R's 250,002),
// Qwen2/Qwen3-like
// (byte-level BPE, pre-tokenizer "qwen2", 151,936 tokens with Qwen's added
// tokens), Gemma-3-like (SentencePiece BPE as llama.cpp reads Gemma's
// files: no space prefix, byte fallback, 262,144 tokens with Gemma's control
// and user-defined tokens) and Gemma-4-like (tokenizer model "gemma4": BPE
// merges over U+2581-spaced UTF-8, byte fallback, 262,144 tokens with Gemma
// 4's markers). The pieces are learned by the tokenizer trainer, so merges
// and scores are ones that real text uses. Deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/text/vocab.h"

namespace tc::profiler {

enum class VocabFamily { Qwen2, Gemma3, Gemma4, Bert, Xlmr };

// "qwen2", "gemma3", "gemma4", "bert", "xlmr".
std::string_view vocab_family_name(VocabFamily family);
std::optional<VocabFamily> vocab_family_from_name(std::string_view name);

// The text the families' pieces are learned from: the shipped tokenizer
// corpus, then seeded synthetic text (pseudo-words in Latin, Cyrillic, Greek,
// Arabic, Devanagari, Thai, Hangul, CJK and kana with Zipf-distributed
// frequencies, a word list of every generated word, code and numbers), about
// 6 MB. Valid UTF-8; never contains a family's special token texts.
std::string family_training_text(uint64_t seed);

// The family's vocab, learned from family_training_text(seed):
// Qwen2: ids 0..151642 learned (256 byte chars, then merge results),
//   151643.. Qwen's added tokens (<|endoftext|>, <|im_start|>, <|im_end|>,
//   ..., control; <tool_call>, <think>, ... user-defined), then [PADn]
//   (unused) up to 151,936; bos = pad = <|endoftext|>, eos = <|im_end|>,
//   no BOS added.
// Gemma3: <pad>, <eos>, <bos>, <unk>, <mask>, [multimodal], <unused0..98>,
//   <start_of_turn>, <end_of_turn> (control), user-defined newline, space and
//   tab runs and HTML tags, <0x00>..<0xFF>, the learned pieces (scores
//   -rank), <start_of_image>, <end_of_image>, <unused99..6241>; 262,144
//   tokens; BOS added, no space prefix.
// Gemma4: <pad>, <eos>, <bos>, <unk>, <mask>, [multimodal], <unused0..98>,
//   <|turn> (105), <turn|> (106), <|think|>, <|tool>, <tool|> (control),
//   <|tool_call>, <tool_call|>, <|tool_response>, <tool_response|>,
//   <|channel>, <channel|>, <|"|> (user-defined), newline runs of 1..31
//   (normal, no merge makes them), HTML tags (user-defined, </s> among
//   them), <0x00>..<0xFF>, the learned characters and pieces with their
//   merges, <|image>, <image|>, <|audio>, <audio|>, <unused99..6241>;
//   262,144 tokens; tokenizer model "gemma4", no pre key, BOS added.
// Bert: bert-base-uncased's layout (tokenizer model "bert", WordPiece):
//   [PAD] 0, [unused0..98], [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103
//   (control), [unused99..993] to id 998 (normal, U+2581 + text, as
//   llama.cpp's converter writes them), the characters of the normalized
//   text as word starts (U+2581 + c; up to 1000, and 2000 CJK ideographs,
//   the shipped corpus's first, then by frequency), those that can continue
//   a word as continuations, then SPM pieces learned from the text as
//   BERT's uncased normalizer leaves it (word starts with U+2581,
//   continuations plain, as the converter writes "word" and "##x"); 30,522
//   tokens, no scores; bos = [CLS], sep = [SEP], no EOS; lowercase and
//   strip_accents set.
// Xlmr: XLM-RoBERTa's layout as llama.cpp's converter writes it (tokenizer
//   model "t5", SentencePiece unigram): <s> 0, <pad> 1, </s> 2 (control),
//   <unk> 3, 63,995 pieces by score (log-probabilities re-estimated from
//   the text's segmentation), <mask> 63,999 (control); 64,000 tokens;
//   bos = <s>, eos = sep = </s>, pad = <pad>, BOS and EOS added, space
//   prefix and remove_extra_whitespaces on, pre "default", the precompiled
//   charsmap of compat_normalization_rules (charsmap_builder.h); the pieces
//   are learned from the text as that normalizer leaves it.
text::Vocab make_family_vocab(VocabFamily family, uint64_t seed = 1);

namespace detail {
// The Xlmr family from its training text (family_vocab_xlmr.cpp).
text::Vocab xlmr_vocab(const std::string& training_text);
}  // namespace detail

}  // namespace tc::profiler
