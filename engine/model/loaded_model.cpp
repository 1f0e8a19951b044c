// load_model: open + validate + build the tokenizer.
#include "engine/model/loaded_model.h"

#include <stdexcept>

#include "engine/text/vocab.h"

namespace tc::model {

std::unique_ptr<LoadedModel> load_model(const std::filesystem::path& path) {
  auto file = gguf::GgufFile::open(path);
  ModelSpec spec = read_model_spec(file);
  validate_model_tensors(file, spec);
  text::Vocab vocab = text::read_vocab(file);
  if (vocab.n_vocab() != spec.n_vocab) {
    throw file.error("tokenizer.ggml.tokens", "has " + std::to_string(vocab.n_vocab()) +
                                                  " tokens, expected n_vocab " + std::to_string(spec.n_vocab) +
                                                  " (rows of token_embd.weight)");
  }
  std::unique_ptr<text::Tokenizer> tokenizer;
  try {
    tokenizer = text::Tokenizer::create(std::move(vocab));
  } catch (const std::invalid_argument& e) {
    throw file.error("tokenizer.ggml.model", e.what());
  }
  return std::unique_ptr<LoadedModel>(new LoadedModel{std::move(file), std::move(spec), std::move(tokenizer)});
}

}  // namespace tc::model
