// Token sampler: turns one row of logits into the next token id, with the
// llama.cpp / OpenAI controls (logit bias, penalties, top-k, top-p, min-p,
// temperature, seed) and the log-probabilities the API reports.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/dry_penalty.h"
#include "engine/runtime/output_constraint.h"
#include "engine/runtime/sampler_chain.h"
#include "engine/text/vocab.h"

namespace tc::runtime {

using text::TokenId;

// The largest n_probs (OpenAI's `top_logprobs` cap).
inline constexpr int32_t kMaxProbs = 20;

// Per-request sampling controls. The defaults switch every filter and penalty
// off and sample at temperature 1 (OpenAI's defaults); server-wide defaults
// such as llama.cpp's top_k 40 / top_p 0.95 / min_p 0.05 are the config's
// business, not this struct's.
struct SamplingParams {
  // Divides the logits before the draw. 0 = greedy (argmax, ties to the
  // lowest id). Range [0, 2] as OpenAI allows.
  float temperature = 1.0f;
  int32_t top_k = 0;         // keep the k most likely tokens; 0 = off
  float top_p = 1.0f;        // keep the smallest prefix with cumulative prob >= top_p; 1 = off
  float min_p = 0.0f;        // keep tokens with p >= min_p * p_max; 0 = off
  // XTC ("exclude top choices", llama.cpp's xtc sampler): with probability
  // xtc_probability per token, of the tokens left by top-k, top-p and min-p
  // those whose probability among them is >= xtc_threshold are dropped,
  // all but the least likely of them. Off at 0, or with a threshold above
  // 0.5 (at most one token can pass it); not applied at temperature 0.
  float xtc_probability = 0.0f;  // [0, 1]
  float xtc_threshold = 0.1f;    // [0, 1]
  // Top-n-sigma (llama.cpp's, before top-k): keep the tokens whose logit is
  // within top_n_sigma standard deviations (over the vocabulary's finite
  // logits) of the largest. <= 0 = off.
  float top_n_sigma = -1.0f;
  // Dynamic temperature (llama.cpp's dynatemp): with dynatemp_range > 0 the
  // temperature of the draw is temperature - range + 2 range x (the kept
  // candidates' entropy over its maximum)^dynatemp_exponent, at least 0
  // (which keeps the most likely one). 0 = off.
  float dynatemp_range = 0.0f;     // >= 0
  float dynatemp_exponent = 1.0f;  // >= 0
  // Locally typical sampling (llama.cpp's typical, after top-k): keep the
  // tokens whose surprise is closest to the distribution's entropy, the
  // fewest whose probability passes typical_p. 1 = off.
  float typical_p = 1.0f;  // (0, 1]
  // Mirostat (1 or 2, llama.cpp's; 0 = off) replaces top-k, typical, top-p,
  // min-p and XTC: it aims the surprise of each drawn token (-log2 p, at
  // the request's temperature) at mirostat_tau, learning at mirostat_eta.
  // v2 keeps the tokens whose surprise is at most mu (mu starts at 2 tau);
  // v1 keeps the top k, k from a Zipf estimate over the 100 most likely.
  int32_t mirostat = 0;
  float mirostat_tau = 5.0f;  // >= 0
  float mirostat_eta = 0.1f;  // >= 0
  // DRY (dry_penalty.h), after the other penalties: a token that would
  // continue a sequence seen earlier among the last dry_penalty_last_n
  // tokens (prompt included; -1: all of them) loses dry_multiplier *
  // dry_base^(length - dry_allowed_length) when the length reaches
  // dry_allowed_length; no repetition spans a sequence breaker. 0 = off.
  float dry_multiplier = 0.0f;  // >= 0
  float dry_base = 1.75f;       // >= 1
  int32_t dry_allowed_length = 2;
  int32_t dry_penalty_last_n = -1;
  std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
  // llama.cpp repetition penalty over the last repeat_last_n tokens of prompt
  // + generated text, each distinct token once: logit > 0 ? logit / penalty
  // : logit * penalty. 1 = off.
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;  // window for repeat_penalty; 0 = off, -1 = the whole history
  // OpenAI penalties over the generated tokens only (the prompt does not
  // count): logit -= presence * (count > 0) + frequency * count. 0 = off.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // Additive bias per token id. A bias of -100 or below bans the token
  // (its logit becomes -inf); +100 makes it all but certain.
  std::map<TokenId, float> logit_bias;
  // Seeds the sampler's own PRNG (xoshiro256**). Same seed + same sequence of
  // logits = same tokens. The server draws a random seed when the client
  // sends none.
  uint64_t seed = 0;
  int32_t n_probs = 0;  // how many top log-probabilities to return, [0, kMaxProbs]
  // The order of the filter stages (sampler_chain.h; llama-server's
  // `samplers`): empty, llama.cpp's default; else the stages listed, in
  // that order, and no other (one left out is off; without the
  // temperature stage the draw is at temperature 1, unless greedy).
  std::vector<SamplerStage> stage_order;
};

inline constexpr size_t kMaxDryBreakers = 64;

// An error message naming the field at fault ("top_p must be in (0, 1]"), or
// empty when the params are valid. With n_vocab > 0 the logit_bias token ids
// are checked against [0, n_vocab) too, and banning every token is invalid.
std::string validate(const SamplingParams& params, int32_t n_vocab = 0);

struct TokenLogprob {
  TokenId token = -1;
  float logprob = 0.0f;  // natural log
};

enum class SampleStatus {
  Ok,
  // Every logit was NaN or -inf after the bias (all tokens banned, or the
  // model produced garbage): no token can be chosen. The caller ends the
  // request with an error; token is -1.
  NoCandidates,
};

// What one sample() call returns; a fixed-size value, no heap memory.
struct SampleResult {
  SampleStatus status = SampleStatus::Ok;
  TokenId token = -1;
  // Log-probability of `token` under the reported distribution (see Sampler).
  float logprob = 0.0f;
  // The n_probs most likely tokens, logprob descending (ties: lower id
  // first). Banned (-inf) tokens are never listed, so fewer than n_probs
  // entries come back only when fewer tokens are possible.
  std::array<TokenLogprob, kMaxProbs> top{};
  int32_t n_top = 0;

  std::span<const TokenLogprob> top_logprobs() const {
    return {top.data(), static_cast<size_t>(n_top)};
  }
};

// Samples tokens for one sequence. The chain, in order (llama.cpp's order):
//   1. NaN logits become -inf.
//   2. logit_bias (bias <= -100: -inf).
//   3. penalties: repeat_penalty over the window, then presence/frequency,
//      then DRY.
//      With a constrained output (constrain()), then every token that
//      cannot come next in its form becomes -inf.
//   4. If any logit is +inf, those tokens share all the probability (the
//      limit of the softmax); the others become -inf.
//   5. temperature == 0: argmax, done.
//   6. top-n-sigma, top-k, 7. typical, 8. top-p, 9. min-p, 10. XTC, all on
//      the temperature-1 distribution (each renormalised over what the
//      previous step kept; at least one token always survives; XTC's chance
//      is a second draw from the PRNG, made only when it is on),
//   11. temperature (dynamic with dynatemp_range), 12. softmax and a draw
//      from the PRNG.
//   With mirostat, steps 6-10 are its own cut at the request's temperature.
// Reported log-probabilities (SampleResult::logprob and top) are the
// log-softmax at temperature 1 over the whole vocabulary after steps 1-4,
// whatever the temperature and filters: the model's distribution as the
// request shaped it with bias and penalties, which is what OpenAI reports and
// the same for greedy and sampled requests.
//
// Ties are broken by the lower token id everywhere, and the draw scans the
// candidates in an order that does not depend on the standard library, so a
// seed gives the same tokens on every platform for the same logits.
//
// Memory: 12 bytes per vocabulary entry of workspace (plus 4 more each for
// the repeat-window marks and the generated-token counts when those
// penalties are on), allocated by the constructor and reused; sample()
// allocates nothing (accept() grows the history lists, amortised) but a
// small map of DRY's penalised tokens when DRY is on.
// Not thread-safe: one Sampler per sequence, used by one thread at a time.
class Sampler {
 public:
  // The params must be valid (validate(params, n_vocab) empty): an
  // InvariantError otherwise.
  Sampler(SamplingParams params, int32_t n_vocab);

  // Picks the next token from `logits` (f32 [n_vocab], read only). Advances
  // the PRNG by one step per call when temperature > 0 (also when only one
  // candidate is left), never when greedy. Does not record the token: call
  // accept() with what the sequence really appends.
  SampleResult sample(std::span<const float> logits);

  // Records a generated token: it counts for all three penalties.
  void accept(TokenId token);
  // Records prompt tokens: they count for repeat_penalty's window and DRY only.
  // Image placeholders (model/prompt_image.h) are skipped.
  void accept_prompt(std::span<const TokenId> tokens);

  // Forgets the recorded tokens and restarts the PRNG from the seed.
  void reset();

  // DRY's sequence breakers for this vocabulary (make_dry_breakers of
  // params().dry_sequence_breakers); without them DRY runs with none.
  void set_dry_breakers(std::shared_ptr<const DryBreakers> breakers) { dry_breakers_ = std::move(breakers); }

  // Constrained output (JSON mode, a forced tool call): from now on only
  // tokens that keep the generated text (what accept() records) a prefix
  // of `form` can be drawn; they are masked to -inf after step 3, so the
  // reported log-probabilities are those of the constrained distribution.
  // table: the model's (ConstraintTokenTable::from).
  void constrain(std::shared_ptr<const ConstraintTokenTable> table, OutputForm form);
  // Constrained, and the generated text is whole (the object or call closed).
  bool constraint_complete() const { return constraint_ && constraint_->complete(); }

  const SamplingParams& params() const { return params_; }
  // Mirostat's current target surprise (2 tau until a draw; for tests).
  float mirostat_mu() const { return mirostat_mu_; }
  int32_t n_vocab() const { return n_vocab_; }

  static constexpr int kTopPBuckets = 512;  // logit bands of the top-p pre-cut

 private:
  using Candidate = ChainCandidate;

  void prepare_logits(std::span<const float> logits);
  void apply_penalties();
  void fill_top(SampleResult& result, double log_z) const;
  TokenId draw_token(double z);  // z: sum of exp(logit - max) over the vocab
  void exclude_top_choices();    // XTC over candidates_ (see SamplingParams)
  void keep_typical();           // typical_p over candidates_, which come back sorted (Better)
  float top_n_sigma_floor() const;  // the lowest logit top-n-sigma keeps; -inf when off
  float dynamic_temperature() const;  // dynatemp over candidates_
  TokenId draw_mirostat(double u);  // sampler_mirostat.cpp
  void push_window(TokenId token);
  void push_dry(TokenId token);
  uint64_t next_u64();

  SamplingParams params_;
  int32_t n_vocab_;
  std::vector<std::pair<TokenId, float>> bias_;  // logit_bias flattened for the hot loop

  // Repeat-penalty window: a ring of the last repeat_last_n tokens (the whole
  // history when repeat_last_n is -1); window_stamp_[id] == stamp_ marks ids
  // already penalised in the current call.
  std::vector<TokenId> window_;
  size_t window_head_ = 0;  // next slot to overwrite once the ring is full
  std::vector<uint32_t> window_stamp_;
  uint32_t stamp_ = 0;

  // Generated-token counts for presence/frequency, and the distinct ids seen.
  std::vector<int32_t> gen_count_;
  std::vector<TokenId> gen_distinct_;

  // DRY: the recent tokens (prompt and generated; the last
  // dry_penalty_last_n of them count), its breakers and scratch.
  std::vector<TokenId> dry_history_;
  std::shared_ptr<const DryBreakers> dry_breakers_;
  std::vector<int32_t> dry_scratch_;

  float mirostat_mu_ = 0.0f;  // mirostat's running target (see mirostat_mu())
  std::vector<std::pair<double, size_t>> typical_order_;  // typical's scratch
  std::vector<bool> typical_kept_;

  std::array<uint64_t, 4> rng_{};  // xoshiro256** state
  std::optional<OutputConstraint> constraint_;  // constrained output

  std::vector<float> work_;             // f32 [n_vocab]: logits after steps 1-4
  std::vector<Candidate> candidates_;   // [<= n_vocab]: what the filters keep
  bool general_chain_ = false;          // stage_order is not the default's: draw_in_order
  std::vector<Candidate> chain_;        // draw_in_order's candidates
  std::array<uint32_t, kTopPBuckets> hist_{};  // tokens per band, top-p pre-cut
  float max_logit_ = 0.0f;
};

}  // namespace tc::runtime
