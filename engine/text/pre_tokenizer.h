// BPE pre-tokenizers (`tokenizer.ggml.pre`): split text into the words that
// BPE merges run inside, as llama.cpp's llm_tokenizer_bpe does with its
// per-type regex lists, reproduced by hand-written matchers (no regex
// library can do \p{..}). Pure functions: thread-safe.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace tc::text {

// One per distinct llama.cpp behaviour: its regex list plus the flags the
// names carry (ignore_merges, add_bos, default BOS). Each enumerator lists
// the `tokenizer.ggml.pre` names that select it; "L" and "N" below are
// \p{L} and \p{N}, "contractions" is (?i:'s|'t|'re|'ve|'m|'ll|'d).
enum class PreTokenizer {
  // "default", "": [\p{P}$+<=>^~|]+, the GPT-2 regex, \p{N}+, [0-9]{3}.
  Default,
  // 's|'t|'re|'ve|'m|'ll|'d| ?L+| ?N+| ?[^\sLN]+|\s+(?!\S)
  // "gpt2", "gpt-2", "phi-2", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de",
  // "jina-v1-en", "jina-v2-code", "roberta-bpe", "gigachat", "a.x-4.0",
  // "mellum", "modern-bert", "exaone4", "mpt", "olmo", "jais", "trillion",
  // "granite-docling".
  Gpt2,
  // contractions|[^\r\nLN]?L+|N{1,3}| ?[^\sLN]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  // with ignore_merges and add_bos: "llama3", "llama-v3", "llama-bpe",
  // "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano".
  Llama3,
  // The Llama3 regex without its flags: "dbrx", "smaug-bpe".
  Dbrx,
  // The Llama3 regex, no BOS unless the file names one: "glm4", "chatglm-bpe".
  ChatGlm4,
  // The Llama3 regex with whitespace runs cut into 512/256/.../4/2/1: "jais-2".
  Jais2,
  // The Llama3 regex with N single digits: "qwen2", "deepseek-r1-qwen",
  // "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open",
  // "grok-2", "bailingmoe", "bailingmoe2", "llada-moe".
  Qwen2,
  // Qwen2 with marks in words: [\p{L}\p{M}]+, other = [^\s\p{L}\p{M}N]. "qwen35".
  Qwen35,
  // As Qwen2, but ` ?[^\sLN]+` takes no newlines after it: "seed-coder".
  SeedCoder,
  // N{1,3}, then the Llama3 regex with N+; ignore_merges: "minicpm5".
  MiniCpm5,
  // contractions|[^\r\nLN]?(?:L\p{M}*(?: L\p{M}*)*)+|N| ?[^\sLN]+[\r\n/]?|
  // \s*[\r\n]|\s+(?!\S)|\s+ (words run on across single spaces): "exaone-moe".
  ExaoneMoe,
  // [^\n]+|\n+, then the Qwen2 regex: "laguna".
  Laguna,
  // [^\r\nLN]?U*W+|[^\r\nLN]?U+W*|N| ?[^\sLN]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
  // where U = a letter other than a-z, W = a letter other than A-Z (so a
  // non-ASCII letter is both, as llama.cpp's collapsed regex sees it); with
  // ignore_merges and add_bos: "tekken".
  Tekken,
  // Tekken's regex with an optional contraction after each letter word and
  // N{1,3}: "gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2".
  Gpt4o,
  // Gpt4o with marks counted as letters of either case; ignore_merges:
  // "granite-embed-multi-97m".
  GraniteEmbMulti,
  // Digit runs grouped by three from the right, then Gpt4o's regex with
  // case-blind [\p{L}\p{M}] words: "tiny_aya", "cohere2moe".
  TinyAya,
  // Hangul/CJK-punctuation/Bopomofo/CJK-kana runs, then TinyAya's word
  // regex with N single digits; ignore_merges: "youtu".
  Youtu,
  // llama.cpp's Kimi-K2 matcher: Han runs, then letter words without Han,
  // N{1,3} and the Llama3 tail: "kimi-k2".
  KimiK2,
  // [\r\n], \s?[Latin/Greek/Cyrillic/... letters]+, \s?[ASCII/fullwidth
  // punctuation]+, \s+$, [U+0800..U+9FA5 Hangul]+, N+: "deepseek-llm".
  DeepseekLlm,
  // [\r\n], \s?L+, \s?\p{P}+, [U+0800..U+9FA5 Hangul]+, N: "deepseek-coder".
  DeepseekCoder,
  // N{1,3}, [CJK kana]+, then [ASCII punct][A-Za-z]+|[^\r\nL\p{P}\p{S}]?
  // [L\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+:
  // "deepseek-v3", "hunyuan-dense", "joyai-llm".
  Deepseek3,
  // Digit runs grouped by three from the right, [CJK/SE-Asian scripts]+,
  // then Deepseek3's word regex: "afmoe".
  Afmoe,
  // [\p{P}$+<=>^~|`]+, the GPT-2 regex, [0-9]{3}: "falcon".
  Falcon,
  // N, then the GPT-2 regex: "starcoder", "refact", "command-r", "smollm",
  // "codeshell", "exaone", "minerva-7b", "mellum2".
  Starcoder,
  // <sentinel:[0-9]+>, IMGIMG[A-I]{1,4}Z, [\t\n]|4 or 2 spaces, N, each
  // punctuation char, then the GPT-2 regex; add_bos: "chameleon".
  Chameleon,
  // ` ?[^(\s|.,!?…。，、।۔،)]+`: "bloom", "poro-chat", "gpt3-finnish".
  Bloom,
  // Bloom's regex, then N: "viking".
  Viking,
  // N+, then a split wherever the ASCII digits left form whole groups of
  // three: "superbpe".
  SuperBpe,
  // [^\n]+|\n+ over raw UTF-8 (no byte-level chars) with spaces escaped to
  // U+2581 first; a newline run that is a token is taken whole, a piece that
  // is no token falls back to <0xXX> byte tokens; BOS always added (even
  // when the file says not to): "gemma4", "granite-embed-multi-311m", and
  // every `tokenizer.ggml.model` "gemma4" file.
  Gemma4,
};

// Maps a `tokenizer.ggml.pre` value to its pre-tokenizer, as llama.cpp's
// llama_vocab::load does (plus "gpt2", which llama.cpp spells "gpt-2"); an
// empty value is "default". nullopt for any other name, including the ones
// llama.cpp knows whose raw-UTF-8 BPE is not Gemma 4's (see the next function).
std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view name);
// Why a name llama.cpp knows is refused here, for the load error; empty for
// supported and unknown names.
std::string_view pre_tokenizer_refusal(std::string_view name);
// The names accepted above, quoted and comma-separated, for error messages.
std::string_view supported_pre_tokenizer_names();
// llama.cpp's `ignore_merges`: a word that is itself a token is emitted as
// that token without running the merges.
bool pre_tokenizer_ignores_merges(PreTokenizer pre);
// llama.cpp's default for add_bos when the file does not say (Gemma4's is
// forced: read_vocab sets it whatever the file says).
bool pre_tokenizer_default_add_bos(PreTokenizer pre);
// Whether the BPE default BOS id (11) applies when the file names none
// (false for ChatGlm4, where llama.cpp clears it).
bool pre_tokenizer_has_default_bos(PreTokenizer pre);

// Splits valid UTF-8 `text` into words (views into `text`, in order, covering
// it exactly, none empty). Call utf8_sanitize first on untrusted input.
std::vector<std::string_view> pre_tokenize(PreTokenizer pre, std::string_view text);

}  // namespace tc::text
