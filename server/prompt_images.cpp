// tokenize_with_images: see prompt_images.h.
#include "server/prompt_images.h"

#include <string_view>

#include "server/image_input.h"
#include "server/openai_schema.h"

namespace tc::server {

namespace {

struct ImageWrap {
  std::string_view begin, end;  // the text around an image's embeddings
  bool bidirectional = false;   // its embeddings attend to each other (llama.cpp's non-causal decode)
};

ImageWrap image_wrap(const std::string& projector) {
  if (projector == "gemma3") return {"<start_of_image>", "<end_of_image>", true};
  return {"", "", false};
}

ApiError image_error(std::string message) { return invalid_request(std::move(message), "messages"); }

}  // namespace

PromptWithImages tokenize_with_images(const std::string& prompt, const std::vector<std::string>& images,
                                      const ServingModel& serving, const text::EncodeOptions& first, bool encode) {
  PromptWithImages out;
  const auto& tokenizer = *serving.model->tokenizer;
  if (images.empty()) {
    out.ids = tokenizer.encode(prompt, first);
    return out;
  }
  if (!serving.vision) {
    out.error = image_error("model '" + serving.model_id +
                            "' reads no images: it is served without a vision projector (--mmproj, or mmproj in "
                            "its NAME.toml)");
    return out;
  }
  // The pieces between markers.
  std::vector<std::string_view> pieces;
  const std::string_view text(prompt);
  size_t at = 0;
  for (size_t next; (next = text.find(kImageMarker, at)) != std::string_view::npos; at = next + kImageMarker.size()) {
    pieces.push_back(text.substr(at, next - at));
  }
  pieces.push_back(text.substr(at));
  if (pieces.size() != images.size() + 1) {
    out.error = image_error("the request has " + std::to_string(images.size()) + " images but the rendered prompt " +
                            std::to_string(pieces.size() - 1) + " image markers (a message's text holds \"" +
                            std::string(kImageMarker) + "\", or the chat template drops messages)");
    return out;
  }
  text::EncodeOptions rest = first;
  rest.add_special = false;
  const vision::VisionSpec& spec = serving.vision->spec();
  const ImageWrap wrap = image_wrap(spec.projector);
  auto append = [&](std::string_view piece, const text::EncodeOptions& options) {
    if (piece.empty() && !options.add_special) return;
    const auto ids = tokenizer.encode(std::string(piece), options);
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
  };
  append(pieces[0], first);
  for (size_t i = 0; i < images.size(); ++i) {
    model::PromptImage image;
    image.n_tokens = spec.n_image_tokens();
    image.bidirectional = wrap.bidirectional;
    // Counting only: any block will do.
    uint64_t block = ImageEmbedder::content_hash(images[i]);
    if (encode) {
      try {
        auto embedded = serving.vision->embed(images[i]);
        image.rows = std::move(embedded.rows);
        block = embedded.block;
      } catch (const vision::ImageError& e) {
        out.error = image_error("image " + std::to_string(i + 1) + " of the request: " + e.what());
        return out;
      }
    }
    // Another image of this prompt in the same block: the next free one.
    auto taken = [&](uint64_t b) {
      for (const auto& other : out.images) {
        if (other.first_id == model::image_token_block(b)) return true;
      }
      return false;
    };
    while (taken(block)) ++block;
    image.first_id = model::image_token_block(block);
    append(wrap.begin, rest);
    for (int64_t t = 0; t < image.n_tokens; ++t) out.ids.push_back(image.first_id + static_cast<text::TokenId>(t));
    append(wrap.end, rest);
    out.images.push_back(std::move(image));
    append(pieces[i + 1], rest);
  }
  return out;
}

}  // namespace tc::server
