// The FFN activity ring (see ffn_activity.h).
#include "engine/runtime/ffn_activity.h"

#include <algorithm>
#include <utility>

#include "engine/model/hybrid_ffn_block.h"
#include "engine/model/sparse_ffn_block.h"

namespace tc::runtime {
namespace {

void copy_into(const std::vector<int64_t>& from, std::vector<int64_t>& to) {
  std::copy_n(from.begin(), std::min(from.size(), to.size()), to.begin());
}

std::vector<int64_t> difference(const std::vector<int64_t>& newer, const std::vector<int64_t>& older) {
  std::vector<int64_t> out(newer.size());
  for (size_t i = 0; i < newer.size(); ++i) out[i] = newer[i] - older[i];
  return out;
}

}  // namespace

FfnActivityRing::FfnActivityRing(std::string mode, int64_t n_layer, int64_t n_ff)
    : mode_(std::move(mode)), n_ff_(n_ff), ring_(kSteps + 1) {
  const auto n = static_cast<size_t>(std::max<int64_t>(n_layer, 0));
  const bool hybrid = mode_ == "hybrid";
  for (auto& s : ring_) {
    for (auto* v : {&s.tokens, &s.predicted, &s.computed}) v->assign(n, 0);
    for (auto* v : {&s.hot, &s.cached, &s.cold}) v->assign(hybrid ? n : 0, 0);
  }
  filled_ = 1;  // ring_[0]: the counters before the first step, all zeros
}

void FfnActivityRing::record(const model::SparseFfnCounters& ffn, const model::HybridSplitCounters* split) {
  std::lock_guard lock(mutex_);
  if (ring_.empty()) return;
  dense_steps_ = ffn.dense_steps;
  if (ffn.sparse_steps == ring_[newest_].sparse_steps) return;
  newest_ = (newest_ + 1) % ring_.size();
  filled_ = std::min(filled_ + 1, ring_.size());
  Snapshot& s = ring_[newest_];
  copy_into(ffn.token_layers, s.tokens);
  copy_into(ffn.predicted, s.predicted);
  copy_into(ffn.computed, s.computed);
  if (split != nullptr) {
    copy_into(split->hot, s.hot);
    copy_into(split->cached, s.cached);
    copy_into(split->cold, s.cold);
  }
  s.sparse_steps = ffn.sparse_steps;
}

FfnActivity FfnActivityRing::window() const {
  std::lock_guard lock(mutex_);
  FfnActivity a;
  a.mode = mode_;
  a.n_ff = n_ff_;
  a.dense_steps_total = dense_steps_;
  if (ring_.empty()) return a;
  const Snapshot& newer = ring_[newest_];
  const Snapshot& older = ring_[(newest_ + ring_.size() + 1 - filled_) % ring_.size()];
  a.window_steps = newer.sparse_steps - older.sparse_steps;
  a.sparse_steps_total = newer.sparse_steps;
  a.tokens = difference(newer.tokens, older.tokens);
  a.predicted = difference(newer.predicted, older.predicted);
  a.computed = difference(newer.computed, older.computed);
  a.hot = difference(newer.hot, older.hot);
  a.cached = difference(newer.cached, older.cached);
  a.cold = difference(newer.cold, older.cold);
  return a;
}

}  // namespace tc::runtime
