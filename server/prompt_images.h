// A rendered chat prompt with images into token ids: the text between the
// images' markers (kImageMarker) is tokenized piece by piece and each
// marker becomes the projector's opening text, one placeholder id per
// embedding (model/prompt_image.h) and its closing text, as llama.cpp's
// mtmd lays images out (gemma3: <start_of_image> ... <end_of_image>).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/model/prompt_image.h"
#include "engine/text/tokenizer.h"
#include "server/openai_errors.h"
#include "server/server_context.h"

namespace tc::server {

struct PromptWithImages {
  std::vector<text::TokenId> ids;
  std::vector<model::PromptImage> images;  // in prompt order
  std::optional<ApiError> error;           // a 400: no projector, a marker count off, an unreadable image
};

// `images`: the encoded bytes of each marker's image, in order. `first`:
// how the first piece is encoded (BOS or not); the others get no BOS.
// With `encode` false the images' rows stay null (counting tokens only:
// no image is decoded or encoded).
PromptWithImages tokenize_with_images(const std::string& prompt, const std::vector<std::string>& images,
                                      const ServingModel& serving, const text::EncodeOptions& first, bool encode);

}  // namespace tc::server
