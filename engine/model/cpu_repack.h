// Repacking for the CPU backend: the Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q3_K-Q6_K,
// IQ4_XS and IQ4_NL matrices the dense matmul reads (attention, the output head, the FFN when
// it runs dense, and the sparse FFN's predictors) are copied at load into
// the 16-row lane layouts of kernels/cpu/q4_lanes16.h (Q4_0, Q4_1, IQ4_NL),
// q5_lanes16.h (Q5_0, Q5_1),
// q8_lanes16.h and the super-block types' (kquant_lanes16.h; all through
// lanes16.h), which the x86 matmul reads without transposing tiles on
// every call (an 8-sequence decode step of a 1B Q4_0 model 1.7x faster per
// matrix, one sequence 1.1-1.3x; Q4_1 one sequence 1.3x, 8 sequences 3.7x;
// Q8_0 needs half the instructions per byte and streams 35-40% faster;
// Q4_K on AVX2 8 tokens 2.2x, 512 tokens 1.5-2x; Q6_K on AVX2 8 tokens
// 1.8x; IQ4_XS on AVX2 one token 1.6x, 8 tokens 1.6x; IQ4_NL on AVX2 one
// token 1.2x, 8 tokens 2x; Q5_0 and Q5_1 on AVX2 one token 1.5-1.7x, 8
// tokens 2-2.6x). Same bytes per
// weight as the file; the file's pages of a repacked matrix are dropped
// from the process (MADV_DONTNEED), so resident memory stays about one copy
// of the model.
#pragma once

#include <vector>

#include "engine/model/llama_weights.h"
#include "kernels/buffer.h"
#include "kernels/cpu/q4_lanes16.h"

namespace tc::kernels {
class ThreadPool;
}

namespace tc::model {

struct RepackOptions {
  // Which matmul variants get the layout (q4_lanes16.h).
  kernels::CpuRepack mode = kernels::CpuRepack::Auto;
  // Repack ffn_gate / ffn_up / ffn_down too (false when the FFN runs sparse:
  // its rows are gathered by neuron).
  bool ffn = true;
  // Other matrices only the dense matmul reads, repacked the same way (the
  // sparse FFN's predictors fc1 / fc2).
  std::vector<kernels::Tensor*> extra;
};

// Repacks the eligible matrices of `weights` in place (each view then points
// into a buffer appended to `storage`) and returns the bytes repacked. Does
// nothing where the matmul variant does not want the layout under
// options.mode (kernels::lanes16_wanted).
// Eligible: Q4_0, Q4_1, Q8_0 or Q4_K, row layout, at least 16 rows, not the
// tied token_embd (get_rows reads its rows).
size_t repack_for_cpu_matmul(LlamaWeights& weights, const RepackOptions& options, kernels::ThreadPool& pool,
                             std::vector<kernels::Buffer>& storage);

}  // namespace tc::model
