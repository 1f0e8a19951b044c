// repack_for_cpu_matmul: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q3_K, Q4_K, Q5_K, Q6_K,
// IQ4_XS and IQ4_NL row views -> owned lane-tile copies (kernels/cpu/lanes16.h).
#include "engine/model/cpu_repack.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/lanes16.h"

namespace tc::model {
namespace {

// Drops the whole pages of [data, data + bytes) of a file mapping from this
// process; they come back from the file if anything reads them again. The
// range also loses the mapping's huge-page hint (gguf_file.cpp): otherwise
// a read of a small tensor beside it (a layer's norm) maps the 2 MiB folio
// around that tensor and brings back the released pages with it (a 1B Q4_0
// model kept 65 MB of its repacked matrices resident so, 0.55 GiB in all
// against its 0.44 GiB file). Both are hints: an error changes nothing.
void release_mapped_pages(const void* data, size_t bytes) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  if (end <= begin) return;
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_NOHUGEPAGE);
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

// Whether `t` goes into a lane layout under `mode`.
bool eligible(const kernels::Tensor& t, kernels::CpuRepack mode) {
  return kernels::lanes16_wanted(t.dtype, mode) && t.data != nullptr && t.layout == kernels::WeightLayout::Rows &&
         t.ne[2] == 1 && t.ne[3] == 1 && t.n_rows() >= kernels::kLanes16Rows &&
         t.row_bytes == kernels::row_bytes(t.dtype, t.n_cols());
}

// Bytes of t in its lane layout, rounded up to 64.
size_t packed_bytes(const kernels::Tensor& t) {
  const int64_t bytes = kernels::lanes16_bytes(t.dtype, t.n_cols(), t.n_rows());
  return (static_cast<size_t>(bytes) + 63) / 64 * 64;
}

}  // namespace

size_t repack_for_cpu_matmul(LlamaWeights& weights, const RepackOptions& options, kernels::ThreadPool& pool,
                             std::vector<kernels::Buffer>& storage) {
  std::vector<kernels::Tensor*> matrices;
  if (weights.output.data != weights.token_embd.data) matrices.push_back(&weights.output);
  matrices.push_back(&weights.per_layer_model_proj);  // Gemma 4's per-layer inputs (null elsewhere)
  // Gemma 3n's streams from the embedding and back (empty elsewhere).
  for (kernels::Tensor& t : weights.altup_proj) matrices.push_back(&t);
  for (kernels::Tensor& t : weights.altup_unembd_proj) matrices.push_back(&t);
  for (LayerWeights& l : weights.layers) {
    for (kernels::Tensor* t : {&l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output}) matrices.push_back(t);
    // Gemma 4's per-layer input block, Gemma 3n's LAuReL, the recurrent layers' projections (null elsewhere).
    for (kernels::Tensor* t : {&l.per_layer_inp_gate, &l.per_layer_proj, &l.laurel_l, &l.laurel_r, &l.dn_qkv, &l.dn_z,
                               &l.dn_beta, &l.dn_alpha, &l.dn_out, &l.dn_qkvz, &l.dn_ba, &l.m2_in, &l.m2_out, &l.m1_x,
                               &l.m1_dt, &l.sc_in, &l.sc_out}) {
      matrices.push_back(t);
    }
    if (options.ffn) {
      for (kernels::Tensor* t : {&l.ffn_gate, &l.ffn_up, &l.ffn_down}) matrices.push_back(t);
      for (ExpertWeights& e : l.experts) {
        for (kernels::Tensor* t : {&e.gate, &e.up, &e.down}) matrices.push_back(t);
      }
      for (kernels::Tensor* t : {&l.shared_expert.gate, &l.shared_expert.up, &l.shared_expert.down}) {
        matrices.push_back(t);
      }
    }
  }
  matrices.insert(matrices.end(), options.extra.begin(), options.extra.end());
  std::erase_if(matrices, [&](const kernels::Tensor* t) { return !eligible(*t, options.mode); });
  // One buffer for all of them: a huge page per matrix would waste up to
  // 2 MiB each (a 1B model's k/v projections are 288 KB).
  size_t total = 0;
  for (const kernels::Tensor* t : matrices) total += packed_bytes(*t);
  if (total == 0) return 0;
  kernels::Buffer buffer = kernels::Buffer::host_uninitialized(total);  // the repack writes every byte
  std::byte* at = buffer.as<std::byte>();
  for (kernels::Tensor* t : matrices) {
    const kernels::Tensor packed = kernels::pack_lanes16(*t, at, &pool);
    if (t->memory == kernels::MemoryKind::MappedFile) {
      release_mapped_pages(t->data, static_cast<size_t>(t->row_bytes * t->n_rows()));
    }
    at += packed_bytes(*t);
    *t = packed;
  }
  storage.push_back(std::move(buffer));
  return total;
}

}  // namespace tc::model
