// PromptImage: an image's embeddings in a prompt. The prompt holds one
// placeholder id per embedding row, first_id .. first_id + n_tokens - 1,
// all at or above kImageTokenBase (never a vocabulary id); the forward pass
// takes those rows instead of token embeddings. Ids come in blocks
// (image_token_block), one per distinct image (the server's image cache
// hands them out, comparing the images' bytes), so that a later request
// with the same image reuses the cached prefix and a different image never
// does. The block number wraps after kImageBlocks distinct images.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/text/vocab.h"

namespace tc::model {

inline constexpr text::TokenId kImageTokenBase = 1 << 30;
// An image takes at most this many placeholder ids (one aligned block).
inline constexpr int64_t kImageBlockTokens = 1 << 13;
inline constexpr int64_t kImageBlocks = (int64_t{1} << 30) / kImageBlockTokens;

struct PromptImage {
  text::TokenId first_id = kImageTokenBase;
  int64_t n_tokens = 0;
  std::shared_ptr<const std::vector<float>> rows;  // f32 [n_tokens, n_embd of the language model]
  // Its rows attend to each other, not only to the ones before (Gemma 3's
  // images, as llama.cpp decodes them non-causally); the tokens after the
  // image stay causal. The engine keeps such an image in one prefill step.
  bool bidirectional = false;

  bool holds(text::TokenId id) const { return id >= first_id && id - first_id < n_tokens; }
};

inline bool is_image_token(text::TokenId id) { return id >= kImageTokenBase; }

// The first placeholder id of block `block` (taken modulo kImageBlocks).
inline text::TokenId image_token_block(uint64_t block) {
  return kImageTokenBase + static_cast<text::TokenId>((block % kImageBlocks) * kImageBlockTokens);
}

// The image whose placeholders hold `id`, or null.
inline const PromptImage* find_prompt_image(std::span<const PromptImage> images, text::TokenId id) {
  for (const PromptImage& image : images) {
    if (image.holds(id)) return &image;
  }
  return nullptr;
}

}  // namespace tc::model
