// EmbeddingPool: see embedding_pool.h.
#include "engine/runtime/embedding_pool.h"

#include <algorithm>

namespace tc::runtime {

EmbeddingPool::EmbeddingPool(model::Pooling pooling, int64_t n_embd)
    : pooling_(pooling), n_embd_(n_embd), pooled_(static_cast<size_t>(n_embd), 0.0) {}

bool EmbeddingPool::wants_all_rows(int64_t start) const {
  return pooling_ == model::Pooling::Mean || (pooling_ == model::Pooling::Cls && start == 0);
}

void EmbeddingPool::add(const float* rows, int64_t n_rows, int64_t start) {
  if (n_rows <= 0) return;
  switch (pooling_) {
    case model::Pooling::Mean:
      for (int64_t r = 0; r < n_rows; ++r) {
        const float* row = rows + r * n_embd_;
        for (int64_t j = 0; j < n_embd_; ++j) pooled_[static_cast<size_t>(j)] += row[j];
      }
      break;
    case model::Pooling::Cls:
    case model::Pooling::Rank:  // (never here: the engine pools Rank as ModelSpec::rank_rows says)
      if (start == 0) std::copy(rows, rows + n_embd_, pooled_.begin());
      break;
    case model::Pooling::Last:
      std::copy(rows + (n_rows - 1) * n_embd_, rows + n_rows * n_embd_, pooled_.begin());
      break;
  }
}

std::vector<float> EmbeddingPool::result(int64_t n_tokens) const {
  const double scale =
      pooling_ == model::Pooling::Mean && n_tokens > 0 ? 1.0 / static_cast<double>(n_tokens) : 1.0;
  std::vector<float> out(pooled_.size());
  for (size_t j = 0; j < pooled_.size(); ++j) out[j] = static_cast<float>(pooled_[j] * scale);
  return out;
}

}  // namespace tc::runtime
