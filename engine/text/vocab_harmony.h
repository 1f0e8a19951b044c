// OpenAI's harmony format (gpt-oss, the o200k_harmony vocabulary): its
// marker tokens, and the token rules llama.cpp's loader applies to such a
// vocabulary so that generation stops where a harmony reply ends and the
// markers a reply's parser needs reach the text (server/harmony_split.h).
#pragma once

#include <string_view>

#include "engine/text/vocab.h"

namespace tc::text {

inline constexpr std::string_view kHarmonyStart = "<|start|>";
inline constexpr std::string_view kHarmonyEnd = "<|end|>";
inline constexpr std::string_view kHarmonyMessage = "<|message|>";
inline constexpr std::string_view kHarmonyChannel = "<|channel|>";
inline constexpr std::string_view kHarmonyConstrain = "<|constrain|>";
inline constexpr std::string_view kHarmonyReturn = "<|return|>";
inline constexpr std::string_view kHarmonyCall = "<|call|>";

// Whether the vocabulary writes harmony: it has both <|channel|> and
// <|message|> tokens. Linear in the vocabulary; call it once per model.
bool is_harmony_vocab(const Vocab& vocab);

// What Tokenizer does to its vocab after making end-of-generation markers
// control tokens (llama.cpp's "gpt-oss" rules), for a harmony vocabulary
// only (other vocabularies are left alone):
//   - <|channel|>, <|message|>, <|start|> and <|constrain|> become
//     user-defined tokens: always rendered into the text (and always split
//     off when encoding, as llama.cpp does);
//   - when <|return|>, <|call|> and <|end|> are all there, <|end|> becomes
//     user-defined too, so it ends a message, not the generation, and is
//     rendered; an eot id naming it is cleared. <|return|> and <|call|>
//     (is_end_of_generation_text) end the generation and are not rendered.
void apply_harmony_token_rules(Vocab& vocab);

}  // namespace tc::text
