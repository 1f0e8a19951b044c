// The decode time ring (see decode_times.h).
#include "engine/runtime/decode_times.h"

#include <algorithm>

namespace tc::runtime {

DecodeTimeRing::DecodeTimeRing(bool split_timed) : split_timed_(split_timed), ring_(kSteps + 1) {}

void DecodeTimeRing::record(int64_t tokens, double wall_s, const model::HybridTimeSplit* split) {
  std::lock_guard lock(mutex_);
  const Snapshot& prev = ring_[newest_];
  Snapshot next = prev;
  next.steps += 1;
  next.tokens += tokens;
  next.wall_s += wall_s;
  if (split != nullptr) {
    next.gpu_s += split->gpu_s;
    next.cpu_s += split->cpu_s;
    next.wait_s += split->wait_s;
    next.bus_bytes += split->bus_bytes;
    gpu_timed_ = split->gpu_timed;
  }
  newest_ = (newest_ + 1) % ring_.size();
  filled_ = std::min(filled_ + 1, ring_.size());
  ring_[newest_] = next;
}

DecodeTimes DecodeTimeRing::window() const {
  std::lock_guard lock(mutex_);
  const Snapshot& newer = ring_[newest_];
  const Snapshot& older = ring_[(newest_ + ring_.size() + 1 - filled_) % ring_.size()];
  DecodeTimes t;
  t.window_steps = newer.steps - older.steps;
  t.tokens = newer.tokens - older.tokens;
  t.wall_s = newer.wall_s - older.wall_s;
  t.split_timed = split_timed_;
  t.gpu_timed = split_timed_ && gpu_timed_;
  if (split_timed_) {
    t.gpu_s = newer.gpu_s - older.gpu_s;
    t.cpu_s = newer.cpu_s - older.cpu_s;
    t.wait_s = newer.wait_s - older.wait_s;
    t.bus_bytes = newer.bus_bytes - older.bus_bytes;
  }
  t.decode_steps_total = newer.steps;
  return t;
}

model::HybridTimeSplit split_difference(const model::HybridTimeSplit& after, const model::HybridTimeSplit& before) {
  model::HybridTimeSplit d;
  d.steps = after.steps - before.steps;
  d.wall_s = after.wall_s - before.wall_s;
  d.gpu_s = after.gpu_s - before.gpu_s;
  d.gpu_timed = after.gpu_timed;
  d.cpu_s = after.cpu_s - before.cpu_s;
  d.wait_s = after.wait_s - before.wait_s;
  d.bus_bytes = after.bus_bytes - before.bus_bytes;
  return d;
}

}  // namespace tc::runtime
