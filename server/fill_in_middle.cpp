// The fill-in-the-middle prompt and its fit to the room left (see
// fill_in_middle.h).
#include "server/fill_in_middle.h"

#include <algorithm>

namespace tc::server {
namespace {

using text::TokenId;

std::vector<TokenId> plain(const text::Tokenizer& tokenizer, const std::string& text) {
  text::EncodeOptions options;
  options.add_special = false;
  options.parse_special = false;
  return tokenizer.encode(text, options);
}

void append(std::vector<TokenId>& out, const std::vector<TokenId>& more) {
  out.insert(out.end(), more.begin(), more.end());
}

// The extra files' tokens before the prefix, llama.cpp's repo-level layout.
std::vector<TokenId> extra_tokens(const text::Tokenizer& tokenizer, const FimInput& input) {
  const text::FimTokens& fim = tokenizer.vocab().fim;
  std::vector<TokenId> out;
  if (!input.repo_level) return out;
  if (fim.rep >= 0) {
    out.push_back(fim.rep);
    append(out, plain(tokenizer, "myproject\n"));
  }
  for (const FimFile& file : input.extra) {
    if (fim.sep >= 0) {
      out.push_back(fim.sep);
      append(out, plain(tokenizer, file.filename + "\n"));
    } else {
      append(out, plain(tokenizer, "\n\n--- snippet ---\n\n"));
    }
    append(out, plain(tokenizer, file.text));
  }
  if (fim.sep >= 0) {
    out.push_back(fim.sep);
    append(out, plain(tokenizer, "filename\n"));
  }
  return out;
}

// How many of `n` tokens to keep, at most `fit`, dropping tokens from the
// start in steps (an eighth of `fit`, 1 to 64 tokens): while a user types at
// the cursor the cut stays put for a step's worth of tokens, so successive
// prompts share their start and the engine reuses it from the cache. A cut
// that followed every new token would shift the whole prompt each time.
int64_t stepped_take(int64_t n, int64_t fit) {
  if (fit >= n) return n;
  const int64_t step = std::clamp<int64_t>(fit / 8, 1, 64);
  const int64_t drop = (n - fit + step - 1) / step * step;
  return std::max<int64_t>(0, n - drop);
}

}  // namespace

std::string fim_refusal(const text::Vocab& vocab) {
  if (vocab.fim.can_infill()) return {};
  return "this model cannot fill in the middle: its vocabulary has no " + vocab.fim.missing() +
         " token (code models such as Qwen2.5-Coder, StarCoder2, CodeLlama and DeepSeek-Coder have them)";
}

FimPrompt build_fim_prompt(const text::Tokenizer& tokenizer, const FimInput& input, int64_t max_prompt_tokens) {
  const text::Vocab& vocab = tokenizer.vocab();
  std::vector<TokenId> prefix = plain(tokenizer, input.prefix);
  std::vector<TokenId> suffix = plain(tokenizer, input.suffix);
  std::vector<TokenId> extra = extra_tokens(tokenizer, input);
  text::EncodeOptions middle_options;  // as llama.cpp's /infill reads its `prompt`
  middle_options.add_special = false;
  middle_options.parse_special = true;
  const std::vector<TokenId> middle_start = tokenizer.encode(input.middle_start, middle_options);
  const bool bos = vocab.add_bos && vocab.bos_id >= 0;

  // The markers and middle_start are kept whole; the rest shares the room.
  const auto fixed = static_cast<int64_t>(middle_start.size()) + 3 + (bos ? 1 : 0);
  const int64_t room = std::max<int64_t>(0, max_prompt_tokens - fixed);
  const auto n_prefix = static_cast<int64_t>(prefix.size());
  const auto n_suffix = static_cast<int64_t>(suffix.size());
  int64_t take_prefix = n_prefix;
  int64_t take_suffix = n_suffix;
  if (n_prefix + n_suffix > room) {
    const int64_t suffix_share = room / 4;
    take_prefix = stepped_take(n_prefix, room - std::min(n_suffix, suffix_share));
    take_suffix = std::min(n_suffix, room - take_prefix);
  }
  const int64_t take_extra = stepped_take(static_cast<int64_t>(extra.size()), room - take_prefix - take_suffix);

  FimPrompt out;
  out.truncated = take_prefix < n_prefix || take_suffix < n_suffix || take_extra < static_cast<int64_t>(extra.size());
  out.ids.reserve(static_cast<size_t>(fixed + take_prefix + take_suffix + take_extra));
  out.ids.insert(out.ids.end(), extra.end() - take_extra, extra.end());
  if (bos) out.ids.push_back(vocab.bos_id);
  out.ids.push_back(vocab.fim.pre);
  out.ids.insert(out.ids.end(), prefix.end() - take_prefix, prefix.end());
  append(out.ids, middle_start);
  out.ids.push_back(vocab.fim.suf);
  out.ids.insert(out.ids.end(), suffix.begin(), suffix.begin() + take_suffix);
  out.ids.push_back(vocab.fim.mid);
  return out;
}

}  // namespace tc::server
