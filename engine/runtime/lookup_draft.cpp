// Lookup drafts: the n-gram search over a sequence's own tokens and the
// adaptive draft length.
#include "engine/runtime/lookup_draft.h"

#include <algorithm>
#include <string>

namespace tc::runtime {

std::string check_lookup_draft(const LookupDraftOptions& o) {
  if (o.n_max < 0) return "draft n_max must be >= 0, got " + std::to_string(o.n_max);
  if (o.ngram_min < 1) return "draft ngram_min must be >= 1, got " + std::to_string(o.ngram_min);
  if (o.ngram_max < o.ngram_min) {
    return "draft ngram_max (" + std::to_string(o.ngram_max) + ") must be >= ngram_min (" +
           std::to_string(o.ngram_min) + ")";
  }
  return {};
}

std::vector<text::TokenId> lookup_draft(std::span<const text::TokenId> history, int32_t ngram_min,
                                        int32_t ngram_max, int32_t n_draft) {
  std::vector<text::TokenId> draft;
  const auto len = static_cast<int64_t>(history.size());
  if (n_draft < 1 || ngram_min < 1) return draft;
  for (int64_t n = std::min<int64_t>(ngram_max, len - 1); n >= ngram_min; --n) {
    const auto pattern = history.subspan(static_cast<size_t>(len - n));
    // Latest earlier occurrence: it starts at most at len - n - 1, so at
    // least one token follows it.
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(pattern.begin(), pattern.end(), history.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(n_draft, len - from);
      draft.assign(history.begin() + from, history.begin() + from + count);
      return draft;
    }
  }
  return draft;
}

void DraftLength::update(int32_t drafted, int32_t kept) {
  if (drafted < 1) return;
  current_ = kept >= drafted ? std::min(n_max_, current_ + 2) : std::max(1, current_ - 1);
}

}  // namespace tc::runtime
