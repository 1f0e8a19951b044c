// Neuron bundles: layout, packing, and the bundle FFN's driver. The driver
// runs matmul's gathered-row kernels and the axpy kernels (matmul_kernels.h,
// sparse_ffn_kernels.h) over the bundles' strided views, one fixed range of
// slots per task, then adds the ranges' partial sums.
#include "kernels/cpu/neuron_bundles.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "kernels/check.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/sparse_ffn_kernels.h"

namespace tc::kernels {

BundleLayout bundle_layout(DType dtype, int64_t n_embd) {
  TC_CHECK(is_weight_dtype(dtype), "bundle_layout: unsupported weight dtype");
  BundleLayout l;
  l.dtype = dtype;
  l.n_embd = n_embd;
  l.row_bytes = row_bytes(dtype, n_embd);  // CHECKs whole blocks
  l.stride = (2 * l.row_bytes + 63) / 64 * 64;
  return l;
}

namespace {

Tensor part(const BundleSet& b, const std::byte* data, int64_t row_bytes) {
  Tensor t;
  t.data = const_cast<std::byte*>(data);
  t.dtype = b.layout.dtype;
  t.ne = {b.layout.n_embd, b.n_bundles, 1, 1};
  t.row_bytes = row_bytes;
  return t;
}

}  // namespace

Tensor BundleSet::gate_rows() const { return part(*this, gate, layout.row_bytes); }
Tensor BundleSet::up_rows() const { return part(*this, up_down + layout.up_offset(), layout.stride); }
Tensor BundleSet::down_t_rows() const { return part(*this, up_down + layout.down_offset(), layout.stride); }

void pack_bundles(const Tensor& gate, const Tensor& up, const Tensor& down_t, std::span<const int32_t> neurons,
                  const BundleLayout& layout, std::byte* gate_dst, std::byte* up_down_dst, ThreadPool& pool) {
  const Tensor* parts[3] = {&gate, &up, &down_t};
  for (const Tensor* t : parts) {
    TC_CHECK(t->data != nullptr && t->dtype == layout.dtype && t->n_cols() == layout.n_embd &&
                 t->layout == WeightLayout::Rows,
             "pack_bundles: gate, up and down_t must be row-layout matrices of the layout's dtype and width");
  }
  TC_CHECK(gate_dst != nullptr && reinterpret_cast<uintptr_t>(up_down_dst) % 64 == 0,
           "pack_bundles: null gate destination, or up/down destination not 64-byte aligned");
  const auto n = static_cast<int64_t>(neurons.size());
  for (int32_t i : neurons) {
    TC_CHECK(i >= 0 && i < gate.n_rows() && i < up.n_rows() && i < down_t.n_rows(),
             "pack_bundles: neuron index outside the weight matrices");
  }
  const auto rb = static_cast<size_t>(layout.row_bytes);
  const auto pad = static_cast<size_t>(layout.stride - 2 * layout.row_bytes);
  pool.parallel_for(n, 64, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      std::byte* out = up_down_dst + b * layout.stride;
      const int64_t i = neurons[static_cast<size_t>(b)];
      std::memcpy(gate_dst + b * layout.row_bytes, gate.row(i), rb);
      std::memcpy(out, up.row(i), rb);
      std::memcpy(out + rb, down_t.row(i), rb);
      if (pad > 0) std::memset(out + 2 * rb, 0, pad);
    }
  });
}

namespace {

using detail::AxpyArgs;
using detail::AxpyIsa;
using detail::MatmulArgs;
using detail::MatmulIsa;

// What every task of one bundle_ffn call shares.
struct BundleJob {
  const MatmulIsa* isa;
  const AxpyIsa* axpy;
  const BundleSet* bundles;
  const std::byte* xq;  // x prepared for the dtype (matmul's XLayout)
  detail::XLayout xl;
  int64_t n_tokens;
  const int32_t* slots;
  const uint8_t* keep;
  int64_t n_slots;
  Activation act;
  BundleFfnScratch* s;
  int64_t n_chunks;
  std::atomic<int64_t> next_chunk{0};
};

// Gate over chunk c's slots, its live set, up over that, the activation, and
// the down rows summed into the chunk's partial output.
void run_chunk(BundleJob& job, int64_t c) {
  BundleFfnScratch& s = *job.s;
  const int64_t T = job.n_tokens;
  const int64_t k0 = s.chunk_begin[static_cast<size_t>(c)], k1 = s.chunk_begin[static_cast<size_t>(c) + 1];
  const int64_t n = k1 - k0;
  int32_t* live = s.live.data() + c * kBundleChunk;
  uint8_t* token_on = s.token_on.data() + c * T;
  int32_t& n_live = s.n_live[static_cast<size_t>(c)];
  n_live = 0;
  std::memset(token_on, 0, static_cast<size_t>(T));
  if (n == 0) return;
  const BundleLayout& l = job.bundles->layout;
  float* gate = s.gate.data() + c * T * kBundleChunk;  // [T, n], then [T, n_live]
  float* up = s.act.data() + c * T * kBundleChunk;     // [T, n_live]

  MatmulArgs m;
  m.dtype = l.dtype;
  m.w = job.bundles->gate;
  m.row_bytes = l.row_bytes;
  m.n_in = l.n_embd;
  m.n_out = n;
  m.rows = job.slots + k0;
  m.xq = job.xq;
  m.xl = job.xl;
  m.n_tokens = T;
  m.y = gate;
  job.isa->compute_rows(m, 0, n);

  // Each token keeps only its own slots; a slot lives when some token's
  // gate is positive there (relu(gate) is 0 otherwise, whatever up is).
  if (job.keep != nullptr) {
    for (int64_t t = 0; t < T; ++t) {
      const uint8_t* keep = job.keep + t * job.n_slots + k0;
      float* g = gate + t * n;
      for (int64_t k = 0; k < n; ++k) {
        if (keep[k] == 0) g[k] = 0.0f;
      }
    }
  }
  int32_t pos[kBundleChunk];  // positions in the chunk of the live slots
  int64_t m_live = 0;
  for (int64_t k = 0; k < n; ++k) {
    bool on = false;
    for (int64_t t = 0; t < T; ++t) {
      const bool tk = gate[t * n + k] > 0.0f;
      on |= tk;
      token_on[t] |= static_cast<uint8_t>(tk);
    }
    pos[m_live] = static_cast<int32_t>(k);
    live[m_live] = job.slots[k0 + k];
    m_live += on;
  }
  n_live = static_cast<int32_t>(m_live);
  if (m_live == 0) return;
  // Compact gate to [T, n_live] in place (each write lands at or before
  // what it copies).
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < m_live; ++j) gate[t * m_live + j] = gate[t * n + pos[j]];
  }

  m.w = job.bundles->up_down + l.up_offset();
  m.row_bytes = l.stride;
  m.n_out = m_live;
  m.rows = live;
  m.y = up;
  job.isa->compute_rows(m, 0, m_live);
  ffn_activation(job.act, gate, up, T * m_live, up);

  AxpyArgs a;
  a.dtype = l.dtype;
  a.w = job.bundles->up_down + l.down_offset();
  a.row_bytes = l.stride;
  a.n_out = l.n_embd;
  a.rows = live;
  a.n_rows = m_live;
  a.a = up;
  a.n_tokens = T;
  a.y = s.partial.data() + c * T * l.n_embd;
  job.axpy->compute_columns(a, 0, l.n_embd);
}

void run_chunks(BundleJob& job) {
  for (;;) {
    const int64_t c = job.next_chunk.fetch_add(1, std::memory_order_relaxed);
    if (c >= job.n_chunks) return;
    run_chunk(job, c);
  }
}

// y[t, j0..j1) = the sum of the chunks' partials that have a live slot for t.
void reduce_columns(const BundleJob& job, float* y, int64_t j0, int64_t j1) {
  const BundleFfnScratch& s = *job.s;
  const int64_t T = job.n_tokens, n_embd = job.bundles->layout.n_embd;
  for (int64_t t = 0; t < T; ++t) {
    float* yt = y + t * n_embd;
    std::fill(yt + j0, yt + j1, 0.0f);
    for (int64_t c = 0; c < job.n_chunks; ++c) {
      if (s.token_on[static_cast<size_t>(c * T + t)] == 0) continue;
      const float* p = s.partial.data() + (c * T + t) * n_embd;
      for (int64_t j = j0; j < j1; ++j) yt[j] += p[j];
    }
  }
}

template <class T>
T* grown(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

int64_t bundle_ffn_with(const MatmulIsa& isa, const AxpyIsa& axpy, const BundleSet& bundles, const float* x,
                        int64_t n_tokens, const int32_t* slots, int64_t n_slots, const uint8_t* keep, Activation act,
                        float* y, BundleFfnScratch& s, ThreadPool* pool) {
  const BundleLayout& l = bundles.layout;
  TC_CHECK(bundles.gate != nullptr && bundles.up_down != nullptr && x != nullptr && y != nullptr,
           "bundle_ffn: null bundles, input or output");
  TC_CHECK(reinterpret_cast<uintptr_t>(bundles.up_down) % 64 == 0, "bundle_ffn: bundles must be 64-byte aligned");
  TC_CHECK(n_tokens >= 0 && n_slots >= 0 && (slots != nullptr || n_slots == 0), "bundle_ffn: bad slot list");
  TC_CHECK(act == Activation::ReGLU || act == Activation::DReLU, "bundle_ffn: the activation must be ReGLU or DReLU");
  for (int64_t k = 0; k < n_slots; ++k) {
    TC_CHECK(slots[k] >= 0 && slots[k] < bundles.n_bundles && (k == 0 || slots[k] > slots[k - 1]),
             "bundle_ffn: slots must be strictly ascending bundle positions");
  }
  if (n_tokens == 0) return 0;
  const int64_t n_chunks = (bundles.n_bundles + kBundleChunk - 1) / kBundleChunk;
  const int64_t T = n_tokens;
  int32_t* begin = grown(s.chunk_begin, n_chunks + 1);
  int64_t k = 0;
  for (int64_t c = 0; c <= n_chunks; ++c) {
    while (k < n_slots && slots[k] < c * kBundleChunk) ++k;
    begin[c] = static_cast<int32_t>(k);
  }
  grown(s.gate, n_chunks * T * kBundleChunk);
  grown(s.act, n_chunks * T * kBundleChunk);
  grown(s.live, n_chunks * kBundleChunk);
  grown(s.n_live, n_chunks);
  grown(s.token_on, n_chunks * T);
  grown(s.partial, n_chunks * T * l.n_embd);

  BundleJob job{&isa, &axpy, &bundles, nullptr, detail::x_layout(l.dtype, l.n_embd), T, slots, keep, n_slots, act, &s,
                n_chunks};
  // x prepared once for every gate and up row (64-byte aligned, as the
  // kernels read it).
  std::byte* xq_raw = grown(s.xq, job.xl.stride * T + 64);
  std::byte* xq = xq_raw + (64 - reinterpret_cast<uintptr_t>(xq_raw) % 64) % 64;
  isa.quantize_x(job.xl, x, 0, T, xq);
  job.xq = xq;

  BundleJob* jp = &job;
  const int nt = pool != nullptr ? pool->n_threads() : 1;
  if (nt == 1) {
    run_chunks(job);
    reduce_columns(job, y, 0, l.n_embd);
  } else {
    pool->run([jp](int, int) { run_chunks(*jp); });
    const int64_t grain = 64;
    pool->parallel_for(l.n_embd, grain, [jp, y](int64_t j0, int64_t j1) { reduce_columns(*jp, y, j0, j1); });
  }
  int64_t n_live = 0;
  for (int64_t c = 0; c < n_chunks; ++c) n_live += s.n_live[static_cast<size_t>(c)];
  return n_live;
}

}  // namespace

int64_t bundle_ffn(const BundleSet& bundles, const float* x, int64_t n_tokens, const int32_t* slots, int64_t n_slots,
                   const uint8_t* keep, Activation act, float* y, BundleFfnScratch& scratch, ThreadPool& pool) {
  static const detail::AxpyIsa& axpy = detail::axpy_isa_for(detail::chosen_isa());
  return bundle_ffn_with(detail::chosen_isa(), axpy, bundles, x, n_tokens, slots, n_slots, keep, act, y, scratch,
                         &pool);
}

int64_t bundle_ffn_reference(const BundleSet& bundles, const float* x, int64_t n_tokens, const int32_t* slots,
                             int64_t n_slots, const uint8_t* keep, Activation act, float* y,
                             BundleFfnScratch& scratch) {
  return bundle_ffn_with(detail::isa_portable(), detail::axpy_isa_portable(), bundles, x, n_tokens, slots, n_slots,
                         keep, act, y, scratch, nullptr);
}

}  // namespace tc::kernels
