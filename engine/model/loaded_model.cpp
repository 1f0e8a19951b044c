// load_model: open + validate + build the tokenizer.
#include "engine/model/loaded_model.h"

#include <stdexcept>

#include "engine/sparse/activation_stats.h"
#include "engine/text/vocab.h"

namespace tc::model {

std::unique_ptr<LoadedModel> load_model(const std::filesystem::path& path, const LoadOptions& options) {
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
  auto loaded = std::unique_ptr<LoadedModel>(new LoadedModel{std::move(file), std::move(spec), std::move(tokenizer),
                                                             std::nullopt, {}});
  if (!options.stats.empty()) {
    auto stats_file = gguf::GgufFile::open(options.stats);
    const sparse::ActivationStats stats = sparse::read_activation_stats(stats_file);
    sparse::check_stats_match_model(stats, stats_file.path(), loaded->file, loaded->spec);
    loaded->stats_file.emplace(std::move(stats_file));
  }
  // The views point into the mappings, which stay put in `loaded`.
  if (sparse::has_predictors(loaded->file)) {
    loaded->predictors = sparse::map_predictors(loaded->file, loaded->spec);
  } else if (loaded->stats_file && sparse::has_predictors(*loaded->stats_file)) {
    loaded->predictors = sparse::map_predictors(*loaded->stats_file, loaded->spec);
  }
  return loaded;
}

}  // namespace tc::model
