// Temporal locality for synthetic sparse models (`make-model --sparse
// --sparse-overlap F`). Real ReLU models fire much the same neurons for
// neighbouring tokens; random tokens through a random model do not. So
// attention head 0 of each layer is made positional: its query and key
// rows read only the constant residual channel, in the RoPE pairs of
// angular frequency <= kRecencyMaxTheta, so its score depends only on how
// far back a token is (a sum of cosines), and it averages the values of the
// last few tokens. Its output is then scaled, layer by layer, until a
// token's active neurons overlap the previous token's by the chosen fraction
// (sparse_planting.cpp measures that on the calibration tokens).
#pragma once

#include <cstdint>
#include <vector>

namespace tc::profiler {

// Pairs rotating faster than this (radians per position) are left out:
// they would make the score oscillate from one token to the next.
inline constexpr double kRecencyMaxTheta = 0.5;
// The score falls off as distance^-kRecencyTailExponent beyond the window
// (pairs slower than 1/d add the same to every distance < 1/theta), so
// the weights' tail sums to a few percent.
inline constexpr double kRecencyTailExponent = 2.5;

// What head 0's query and key rows carry: the RoPE pairs i (dims 2i and
// 2i + 1 of the head, "normal" RoPE) it uses, and the score each adds at
// distance 0 after attention's 1/sqrt(head_dim): the score at distance d is
// amplitude * sum_i cos(theta_i * d), theta_i = rope_base^(-2i / head_dim).
struct RecencyPairs {
  std::vector<int64_t> pairs;
  double amplitude = 0.0;
};

// The pairs of theta_i <= kRecencyMaxTheta (at least the slowest one) and
// amplitude = kRecencyTailExponent * ln(rope_base^(2 / head_dim)).
RecencyPairs recency_pairs(int64_t head_dim, double rope_base);

// The attention weights of head 0 for a token with `context` tokens before
// it: softmax over distances 0..context of the scores above (index d =
// distance). For tests and docs.
std::vector<double> recency_weights(const RecencyPairs& p, int64_t head_dim, double rope_base, int64_t context);

// The fraction of a token's active neurons that were active for the
// previous token of its sequence: sum over tokens of |A_t and A_t-1| over
// sum of |A_t|, for tokens 1..seq_len-1 of each sequence of seq_len tokens.
// active: [n_tok, n] bytes, nonzero = active; n_tok a multiple of seq_len.
double consecutive_overlap(const std::vector<uint8_t>& active, int64_t n_tok, int64_t n, int64_t seq_len);

}  // namespace tc::profiler
