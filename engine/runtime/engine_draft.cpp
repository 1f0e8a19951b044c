// The lookup drafts' part of an engine step (lookup_draft.h): a decoding
// sequence proposes the tokens that followed its latest n-gram before, runs
// them through the model with its sampled token, and keeps each drafted
// token its logits' sampling draws, in order.
#include <algorithm>

#include "engine/runtime/engine_impl.h"

namespace tc::runtime {

int32_t Engine::Impl::draft_limit(const Sequence& seq, int slot_idx, int64_t budget) const {
  // Rejected draft tokens are cut back off the cache: not where a recurrent state holds them.
  if (!kv->keeps_prefixes()) return 0;
  int64_t n = seq.draft_length.current();
  n = std::min(n, budget - 1);                                  // the step's budget after its own token
  n = std::min(n, kv->n_ctx() - kv->n_used(slot_idx) - 1);     // the slot's room after its own token
  n = std::min<int64_t>(n, seq.request.max_tokens - seq.n_generated - 1);  // the step emits up to 1 + n
  return static_cast<int32_t>(std::max<int64_t>(n, 0));
}

int32_t Engine::Impl::propose_draft(int slot_idx, int32_t limit) {
  Slot& slot = slots[static_cast<size_t>(slot_idx)];
  Sequence& seq = *slot.seq;
  seq.verify.clear();
  if (limit < 1) return 0;
  // The history is the slot's tokens and the one sampled last (briefly
  // appended, so the search sees one span).
  slot.cached.push_back(seq.next_token);
  auto draft = lookup_draft(slot.cached, options.lookup_draft.ngram_min, options.lookup_draft.ngram_max, limit);
  slot.cached.pop_back();
  // An image's placeholders are never drafted: the draft stops before one.
  draft.erase(std::find_if(draft.begin(), draft.end(), model::is_image_token), draft.end());
  if (draft.empty()) return 0;
  seq.verify.reserve(1 + draft.size());
  seq.verify.push_back(seq.next_token);
  seq.verify.insert(seq.verify.end(), draft.begin(), draft.end());
  delta_drafted += static_cast<int64_t>(draft.size());
  return static_cast<int32_t>(draft.size());
}

void Engine::Impl::check_draft(int slot_idx, const Sequence* seq, const float* rows, size_t row_size) {
  Slot& slot = slots[static_cast<size_t>(slot_idx)];
  // Finished on its first token: the slot keeps every entry, since each
  // holds what the tokens in slot.cached give (prefix reuse stays exact).
  if (slot.seq.get() != seq) return;
  const auto n_draft = static_cast<int32_t>(slot.seq->verify.size()) - 1;
  const int64_t n_before = kv->n_used(slot_idx) - 1 - n_draft;
  int32_t kept = 0;
  while (kept < n_draft) {
    Sequence& s = *slot.seq;
    // Row `kept` was sampled; its token is next_token. Row kept + 1 holds
    // the logits after the drafted token at that position: valid only if
    // the sample drew it.
    if (s.next_token != s.verify[static_cast<size_t>(kept) + 1]) break;
    ++kept;
    emit(slot_idx, s.sampler.sample(std::span(rows + static_cast<size_t>(kept) * row_size, row_size)));
    if (slot.seq.get() != seq) break;  // finished (stop, length, end of generation)
  }
  delta_draft_kept += kept;
  if (slot.seq.get() != seq) return;
  Sequence& s = *slot.seq;
  s.draft_length.update(n_draft, kept);
  s.verify.clear();
  // The entries after the kept draft are another continuation's.
  const int64_t keep = n_before + 1 + kept;
  kv->set_used(slot_idx, keep);
  slot.cached.resize(static_cast<size_t>(keep));
}

}  // namespace tc::runtime
