// The order of the sampler's filter stages, as llama-server's `samplers`
// field sets it: top-n-sigma, top-k, typical, top-p, min-p, XTC and the
// temperature, applied in the order given, each to what the ones before
// it left and at the temperature reached so far (a temperature before
// min-p makes min-p judge the scaled distribution). A stage left out is
// not applied. The sampler's fast path keeps llama.cpp's default order;
// draw_in_order() is the general chain it falls back to when the stages
// that are on come in another order.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/text/vocab.h"

namespace tc::runtime {

struct SamplingParams;

enum class SamplerStage : uint8_t { TopNSigma, TopK, Typical, TopP, MinP, Xtc, Temperature };

// llama.cpp's default order (after its penalties and DRY, which this
// sampler always applies first).
inline constexpr std::array<SamplerStage, 7> kDefaultStageOrder = {
    SamplerStage::TopNSigma, SamplerStage::TopK, SamplerStage::Typical, SamplerStage::TopP,
    SamplerStage::MinP,      SamplerStage::Xtc,  SamplerStage::Temperature};

// llama-server's `samplers`, read as llama.cpp reads it: names
// ("top_k", "typ_p", "temperature", ..., their kebab-case and dashless
// forms, "nucleus", "temp", "typ"), or one character each ("k", "y", "p",
// "m", "t", "x", "s", "d", "e"). Unknown names are skipped, as llama.cpp
// skips them. `penalties` and `dry`: whether those were listed.
struct SamplerList {
  std::vector<SamplerStage> stages;  // in order, each once
  bool penalties = false;
  bool dry = false;
};
SamplerList sampler_list_from_names(std::span<const std::string_view> names);
SamplerList sampler_list_from_chars(std::string_view chars);

// Sets p.stage_order from `list`, as llama.cpp applies a sampler list: the
// penalties and DRY are off unless listed, and a list of no stage leaves
// the plain distribution at temperature 1 (greedy stays greedy). Call it
// after every other sampling field is set.
void use_sampler_list(SamplerList list, SamplingParams& p);

// Whether `p` (with its stage_order) needs the general chain: the stages
// that are on do not come in the default order.
bool needs_general_chain(const SamplingParams& p);

// The general chain's draw from `logits` (f32 [n_vocab], after penalties
// and masks; -inf is out) with p.stage_order. u in [0, 1) picks the token;
// xtc_now: XTC fires this time. Candidates are kept best first (logit
// descending, ties to the lower id), the order the draw scans.
struct ChainCandidate {
  float logit;  // the fast path turns it into the unnormalised weight once the temperature is applied
  text::TokenId id;
};
// The canonical order of candidates, a strict total one: logit descending,
// ties to the lower id, so that every partition and sort gives one answer
// on every standard library.
struct Better {
  bool operator()(const ChainCandidate& a, const ChainCandidate& b) const {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  }
};
text::TokenId draw_in_order(std::span<const float> logits, const SamplingParams& p, double u, bool xtc_now,
                            std::vector<ChainCandidate>& scratch);

}  // namespace tc::runtime
