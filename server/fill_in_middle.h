// Fill-in-the-middle prompts for code completion: the code before the cursor
// (prefix) and after it (suffix) placed between a code model's FIM tokens
// (text/fim_tokens.h) so that the model writes what goes between. Used by
// `suffix` on /v1/completions and Ollama's /api/generate, and by llama.cpp's
// /infill. The layout is llama.cpp's (its server's infill prompt):
//
//   [extra files] [BOS] <PRE> prefix middle_start <SUF> suffix <MID>
//
// where the extra files (/infill's input_extra) are, for vocabularies with
// the repo tokens, <REPO>myproject\n <SEP>name\n text ... <SEP>filename\n,
// and otherwise each text after a "--- snippet ---" line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/text/tokenizer.h"

namespace tc::server {

struct FimFile {
  std::string filename;  // "tmp" when a client sends none, as llama.cpp
  std::string text;
};

struct FimInput {
  std::string prefix;        // the code before the cursor
  std::string suffix;        // the code after it
  std::string middle_start;  // /infill's `prompt`: text the middle must start with
  std::vector<FimFile> extra;
  // llama.cpp's /infill layout: the repo and file-separator tokens (where the
  // vocabulary has them) even without extra files. Off: the plain layout
  // Ollama's and OpenAI's `suffix` give (nothing before the prefix but BOS).
  bool repo_level = false;
};

// The 400's message when `vocab` cannot fill in the middle, naming the
// missing tokens; empty when it can.
std::string fim_refusal(const text::Vocab& vocab);

struct FimPrompt {
  std::vector<text::TokenId> ids;
  // Tokens dropped to fit max_prompt_tokens: the prefix loses its start,
  // the suffix its end and the extra files their start, keeping the code
  // nearest the cursor.
  bool truncated = false;
};

// The prompt's token ids, at most `max_prompt_tokens` where the markers and
// middle_start leave room (they are never cut; the result is then longer
// and the caller's context check refuses it). When both do not fit, the
// prefix gets three quarters of the room and the suffix the rest (either
// gives the other what it does not need); the extra files get what both
// leave. The prefix and the files lose their start in steps of up to 64
// tokens (an eighth of their room), so that the prompts of someone typing
// at the cursor keep their start, and the engine its cache, for a step;
// the suffix takes what the step frees. Prefix, suffix and files are
// tokenized as plain text (no special tokens parsed, no BOS), as llama.cpp
// does. Requires fim_refusal(tokenizer.vocab()) to be empty.
FimPrompt build_fim_prompt(const text::Tokenizer& tokenizer, const FimInput& input, int64_t max_prompt_tokens);

}  // namespace tc::server
