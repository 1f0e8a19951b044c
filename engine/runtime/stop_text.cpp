// StopTextFilter: hold back possible stop-string prefixes, cut at the first
// complete match.
#include "engine/runtime/stop_text.h"

#include <algorithm>
#include <utility>

namespace tc::runtime {

StopTextFilter::StopTextFilter(std::vector<std::string> stops) {
  for (size_t i = 0; i < stops.size(); ++i) {
    if (stops[i].empty()) continue;
    stops_.push_back(std::move(stops[i]));
    original_index_.push_back(i);
  }
}

std::string StopTextFilter::push(std::string_view piece) {
  if (found_) return {};
  if (stops_.empty()) return std::string(piece);
  pending_.append(piece);

  // Nothing emitted so far can be the start of a match (it was never a
  // possible prefix), so every match starts inside pending_. The earliest
  // complete match wins.
  size_t cut = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t at = pending_.find(stops_[i]);
    if (at < cut) {
      cut = at;
      found_index_ = static_cast<int>(original_index_[i]);
    }
  }
  if (cut != std::string::npos) {
    found_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    pending_.shrink_to_fit();
    return out;
  }

  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold_from = pending_.size();
  for (const auto& stop : stops_) {
    const size_t longest = std::min(stop.size() - 1, pending_.size());
    for (size_t n = longest; n > 0; --n) {
      const size_t from = pending_.size() - n;
      if (from >= hold_from) break;  // an earlier stop already holds at least this much
      if (std::string_view(pending_).substr(from) == std::string_view(stop).substr(0, n)) {
        hold_from = from;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, hold_from);
  pending_.erase(0, hold_from);
  return out;
}

std::string StopTextFilter::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace tc::runtime
