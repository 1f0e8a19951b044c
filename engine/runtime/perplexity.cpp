// perplexity(): chunked evaluation and llama.cpp's scoring and error estimate.
#include "engine/runtime/perplexity.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace tc::runtime {

std::vector<text::TokenId> chunk_tokens(std::span<const text::TokenId> tokens, int64_t begin, int64_t n,
                                        text::TokenId bos) {
  if (begin < 0 || n < 0 || begin + n > static_cast<int64_t>(tokens.size())) {
    throw std::out_of_range("chunk_tokens: [" + std::to_string(begin) + ", " + std::to_string(begin + n) +
                            ") outside " + std::to_string(tokens.size()) + " tokens");
  }
  std::vector<text::TokenId> out(tokens.begin() + begin, tokens.begin() + begin + n);
  if (bos >= 0 && !out.empty()) out[0] = bos;
  return out;
}

double negative_log_likelihood(std::span<const float> logits, text::TokenId target) {
  double max_logit = -INFINITY;
  for (const float l : logits) max_logit = std::max(max_logit, static_cast<double>(l));
  double sum = 0;
  for (const float l : logits) sum += std::exp(static_cast<double>(l) - max_logit);
  return std::log(sum) - (static_cast<double>(logits[static_cast<size_t>(target)]) - max_logit);
}

PerplexityResult perplexity(model::LlamaModel& model, KvCache& kv, std::span<const text::TokenId> tokens,
                            text::TokenId bos, const PerplexityOptions& options,
                            const PerplexityCallbacks& callbacks) {
  const int64_t n_ctx = options.n_ctx;
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  if (n_ctx < 4) {
    throw std::invalid_argument("perplexity: the context must hold at least 4 tokens, got " + std::to_string(n_ctx));
  }
  if (options.n_batch < 1) throw std::invalid_argument("perplexity: the batch size must be at least 1");
  if (kv.n_ctx() < n_ctx) {
    throw std::invalid_argument("perplexity: the KV cache holds " + std::to_string(kv.n_ctx()) +
                                " positions, a chunk needs " + std::to_string(n_ctx));
  }
  if (n_tokens < 2 * n_ctx) {
    throw std::invalid_argument("perplexity: the text has " + std::to_string(n_tokens) +
                                " tokens; a context of " + std::to_string(n_ctx) + " needs at least " +
                                std::to_string(2 * n_ctx) +
                                " (two chunks, the second half of each scored): give a longer text or a smaller --ctx");
  }
  const int64_t n_vocab = model.spec().n_vocab;
  int64_t n_chunks = n_tokens / n_ctx;
  if (options.n_chunks > 0) n_chunks = std::min(n_chunks, options.n_chunks);
  const int64_t first = n_ctx / 2;  // the first position whose logits are scored
  const int64_t n_batch = std::min(options.n_batch, n_ctx);

  PerplexityResult result;
  result.n_tokens = n_tokens;
  result.n_chunks = n_chunks;
  double nll = 0;   // sums over every scored token so far
  double nll2 = 0;
  std::vector<float> logits;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const int64_t start = c * n_ctx;
    const auto chunk = chunk_tokens(tokens, start, n_ctx, bos);
    kv.clear(0);
    double chunk_nll = 0;
    for (int64_t b = 0; b < n_ctx; b += n_batch) {
      const int64_t n = std::min(n_batch, n_ctx - b);
      // Logits are needed only for positions >= first; earlier batches ask for none but the last row.
      const bool scored = b + n > first;
      const model::StepSequence step{0, std::span(chunk).subspan(static_cast<size_t>(b), static_cast<size_t>(n)),
                                     scored};
      const auto status = model.forward({&step, 1}, kv, logits);
      if (status == model::StepStatus::InvalidToken) {
        throw std::invalid_argument("perplexity: a token id in chunk " + std::to_string(c) + " is outside [0, " +
                                    std::to_string(n_vocab) + ")");
      }
      if (status != model::StepStatus::Ok) throw std::logic_error("perplexity: the chunk does not fit the KV cache");
      if (callbacks.on_progress) callbacks.on_progress(start + b + n, n_chunks * n_ctx);
      if (!scored) continue;
      // Row r holds the logits after position b + r, predicting the token at b + r + 1.
      for (int64_t j = std::max(first, b); j < std::min(b + n, n_ctx - 1); ++j) {
        const std::span<const float> row(logits.data() + (j - b) * n_vocab, static_cast<size_t>(n_vocab));
        const double v = negative_log_likelihood(row, tokens[static_cast<size_t>(start + j + 1)]);
        chunk_nll += v;
        nll2 += v * v;
      }
    }
    kv.clear(0);
    nll += chunk_nll;
    result.chunk_nll_sums.push_back(chunk_nll);
    const int64_t per_chunk = n_ctx - 1 - first;
    result.n_scored += per_chunk;
    if (callbacks.on_chunk) {
      callbacks.on_chunk({c, n_chunks, chunk_nll, per_chunk, std::exp(nll / static_cast<double>(result.n_scored))});
    }
  }
  const auto count = static_cast<double>(result.n_scored);
  result.mean_nll = nll / count;
  result.ppl = std::exp(result.mean_nll);
  const double variance = nll2 / count - result.mean_nll * result.mean_nll;
  result.ppl_error = variance > 0 && count > 1 ? std::sqrt(variance / (count - 1)) * result.ppl : 0;
  return result;
}

}  // namespace tc::runtime
