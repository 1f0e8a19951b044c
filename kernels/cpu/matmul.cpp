// The matmul driver: picks the instruction-set variant once (CPUID, XCR0
// and THERMOCLINE_ISA), quantizes the activations into a scratch buffer
// that grows once per calling thread, and splits the output rows across the
// pool. The kernels themselves sit in matmul_{portable,avx2,avx512,
// avx512bf16,amx}.cpp.
#include "kernels/cpu/matmul.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/check.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/kquant_lanes16.h"
#include "kernels/cpu/lanes16.h"

namespace tc::kernels {
namespace detail {
namespace {

constexpr int64_t align64(int64_t v) { return (v + 63) / 64 * 64; }

// Rows are handed out in chunks that threads claim from a shared counter
// (lock-free), about kChunksPerThread per thread, a multiple of kRowGrain
// rows: 16 f32 outputs fill a cache line, so threads never write the same
// line of y. Claiming rather than fixed halves keeps both threads streaming
// neighbouring memory (two streams a power of two apart can collide in the
// DRAM interleave) and lets a thread that got the core longer do more. Which
// thread computes an output never changes its bits.
constexpr int64_t kRowGrain = 16;
constexpr int64_t kChunksPerThread = 8;

// Below this many tokens the activations are quantized by the calling
// thread alone; above, by the pool (a second fork/join is cheaper).
constexpr int64_t kParallelQuantizeTokens = 8;

struct CpuFeatures {
  bool avx2 = false;    // AVX2 + FMA + F16C, YMM state enabled by the OS
  bool avx512 = false;  // AVX-512 F/BW/VL/VNNI, ZMM and opmask state enabled by the OS
  bool avx512bf16 = false;  // and AVX512_BF16
  bool amx = false;  // avx512 and AMX-TILE + AMX-INT8, tile state enabled by the OS and granted to this process
};

#if defined(__x86_64__) || defined(__i386__)
// Linux hands out the 8 KiB AMX tile state per process, on request
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); before that a
// tile instruction faults. Granted once, it holds for every thread.
bool request_amx_state() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

uint64_t read_xcr0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect_cpu() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c & bit_OSXSAVE) != 0;
  const bool fma = (c & bit_FMA) != 0;
  const bool f16c = (c & bit_F16C) != 0;
  const bool avx = (c & bit_AVX) != 0;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = read_xcr0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;    // SSE and AVX state
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;  // plus opmask, ZMM_Hi256, Hi16_ZMM
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const bool avx2 = (b & bit_AVX2) != 0;
  const bool avx512f = (b & bit_AVX512F) != 0;
  const bool avx512bw = (b & bit_AVX512BW) != 0;
  const bool avx512vl = (b & bit_AVX512VL) != 0;
  const bool avx512vnni = (c & bit_AVX512VNNI) != 0;
  constexpr unsigned kAmxTile = 1u << 24, kAmxInt8 = 1u << 25;  // CPUID.(EAX=7, ECX=0):EDX
  const bool amx_int8 = (d & kAmxTile) != 0 && (d & kAmxInt8) != 0;
  const bool tile_state = (xcr0 & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  f.avx2 = ymm_state && avx2 && fma && f16c;
  f.avx512 = f.avx2 && zmm_state && avx512f && avx512bw && avx512vl && avx512vnni;
  constexpr unsigned kAvx512Bf16 = 1u << 5;  // CPUID.(EAX=7, ECX=1):EAX
  f.avx512bf16 = f.avx512 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & kAvx512Bf16) != 0;
  f.amx = f.avx512 && amx_int8 && tile_state && request_amx_state();
  return f;
}
#else
CpuFeatures detect_cpu() { return {}; }
#endif

const CpuFeatures& cpu() {
  static const CpuFeatures features = detect_cpu();
  return features;
}

// Variants from the lowest to the highest.
const MatmulIsa* variant(int level) {
  switch (level) {
    case 0:
      return &isa_portable();
    case 1:
      return cpu().avx2 ? isa_avx2() : nullptr;
    case 2:
      return cpu().avx512 ? isa_avx512() : nullptr;
    case 3:
      return cpu().avx512bf16 ? isa_avx512bf16() : nullptr;
    case 4:
      return cpu().amx ? isa_amx() : nullptr;
    default:
      return nullptr;
  }
}

int level_of(const char* name) {
  if (std::strcmp(name, "portable") == 0) return 0;
  if (std::strcmp(name, "avx2") == 0) return 1;
  if (std::strcmp(name, "avx512") == 0) return 2;
  if (std::strcmp(name, "avx512bf16") == 0) return 3;
  if (std::strcmp(name, "amx") == 0) return 4;
  return -1;
}

const MatmulIsa& best_variant() {
  for (int level = 4; level > 0; --level) {
    if (const MatmulIsa* v = variant(level)) return *v;
  }
  return isa_portable();
}

// A 64-byte aligned byte buffer that only grows.
class Scratch {
 public:
  Scratch() = default;
  ~Scratch() { release(); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  std::byte* get(int64_t n_bytes) {
    if (n_bytes > capacity_) {
      release();
      // Grow geometrically so a slowly rising token count reallocates rarely.
      const int64_t cap = align64(n_bytes > 2 * capacity_ ? n_bytes : 2 * capacity_);
      data_ = static_cast<std::byte*>(::operator new (static_cast<size_t>(cap), std::align_val_t{64}));
      capacity_ = cap;
    }
    return data_;
  }

 private:
  void release() {
    if (data_ != nullptr) ::operator delete (data_, std::align_val_t{64});
    data_ = nullptr;
    capacity_ = 0;
  }
  std::byte* data_ = nullptr;
  int64_t capacity_ = 0;
};

// What the pool's threads share during one call (one matrix, or up to
// kMaxSharedInput sharing x); passed by pointer so the job lambda stays
// small enough for std::function's inline storage. Matrix i's row chunks
// are the job's chunks [first_chunk[i], first_chunk[i + 1]).
constexpr int kMaxSharedInput = 4;
struct Job {
  const MatmulIsa* isa;
  const float* x;
  std::byte* xq;
  int64_t n_tokens;
  const MatmulArgs* xl_args;  // the first matrix: its activation layout is everyone's
  int n_matrices = 0;
  const MatmulArgs* args[kMaxSharedInput] = {};
  int64_t rows_per_chunk[kMaxSharedInput] = {};
  int64_t first_chunk[kMaxSharedInput + 1] = {};
  std::atomic<int64_t> next_chunk{0};
};

// Thread t's share [begin, end) of n items.
void share(int64_t n, int t, int nt, int64_t& begin, int64_t& end) {
  begin = n * t / nt;
  end = n * (t + 1) / nt;
}

// Interleaves the a.n_tokens (<= kLaneXTokens) prepared rows at a.xq into
// LaneX (matmul_kernels.h) at dst.
void build_lane_x(const MatmulArgs& a, std::byte* dst) {
  const int64_t nb = a.n_in / 32;
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const std::byte* row = a.xq + t * a.xl.stride;
    // The last pair of an odd nb reads 32 bytes past qs, inside the row's
    // padding up to d_offset (align64(n_in)).
    for (int64_t p = 0; p < (nb + 1) / 2; ++p) std::memcpy(dst + (p * kLaneXTokens + t) * 64, row + 64 * p, 64);
    for (int64_t g = 0; g < (nb + 7) / 8; ++g) {
      const int64_t at = (g * kLaneXTokens + t) * 32;
      std::memcpy(dst + lane_x_gs8_offset(nb) + at, row + a.xl.gs8_offset + 32 * g, 32);
      std::memcpy(dst + lane_x_gd_offset(nb) + at, row + a.xl.gd_offset + 32 * g, 32);
    }
  }
}

// Whether the variant reads `dtype`'s lane tiles itself for a call of
// n_tokens tokens.
bool reads_lanes16(const MatmulIsa& isa, DType dtype, int64_t n_tokens) {
  switch (dtype) {
    case DType::Q8_0:
      return isa.q8_lanes16;
    case DType::Q3_K:
      return isa.q3k_lanes16;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return n_tokens <= isa.k_lanes16_max_tokens;
    case DType::IQ4_XS:
      return isa.iq4xs_lanes16 && n_tokens <= isa.k_lanes16_max_tokens;
    case DType::IQ4_NL:
      return isa.iq4nl_lanes16;
    case DType::Q5_0:
    case DType::Q5_1:
      return isa.q5_lanes16;
    default:
      return isa.q4_lanes16;
  }
}

// Outputs [r0, r1) of a lane-tile matrix (lanes16_layout): the
// tiles by a variant that reads them, or unpacked 16 rows at a time; the rows
// after the tiles as the row-layout matrix they are. Row chunks start at
// multiples of kRowGrain (16), so a range splits at tile edges only.
void compute_lane_rows(const MatmulIsa& isa, const MatmulArgs& a, int64_t r0, int64_t r1) {
  MatmulArgs rows = a;  // outputs r >= first read rows[r - first] of `base`
  rows.lane_rows = 0;
  // The row kernels address row r at w + r * row_bytes: w is set that far
  // before the rows they read (integer arithmetic: it may point outside them).
  auto rows_at = [&rows](const std::byte* base, int64_t first) {
    rows.w = reinterpret_cast<const std::byte*>(reinterpret_cast<uintptr_t>(base) - first * rows.row_bytes);
  };
  const int64_t tiled_end = std::min(r1, a.lane_rows);
  if (r0 < tiled_end && reads_lanes16(isa, a.dtype, a.n_tokens)) {
    isa.compute_rows(a, r0, tiled_end);
  } else if (r0 < tiled_end) {
    // The tokens the row kernels take, and the tiles the rest
    // (MatmulIsa::k_rows_token_group: amx's tail past its 16-token AMX
    // tiles would run the VNNI rows kernel, 2x slower than the tiles'
    // kernel at 8 tokens).
    const int64_t group = is_kquant_lanes16(a.dtype) ? isa.k_rows_token_group : 0;
    const int64_t rows_tokens = group > 0 ? a.n_tokens / group * group : a.n_tokens;
    rows.n_tokens = rows_tokens;
    if (rows_tokens < a.n_tokens) {
      MatmulArgs tail = a;
      tail.n_tokens = a.n_tokens - rows_tokens;
      tail.xq += rows_tokens * a.xl.stride;
      tail.y += rows_tokens * a.n_out;
      isa.compute_rows(tail, r0, tiled_end);
    }
    // kUnpackTiles tiles at a time, so that the row kernels' GEMM blocking
    // (AMX prefill: blocks of 64 rows and more) sees whole blocks: tile by
    // tile, AMX read Q4_K at 0.77-0.94x its speed from the file's rows.
    constexpr int64_t kUnpackTiles = 8;
    thread_local Scratch unpacked;
    std::byte* buf = unpacked.get(kUnpackTiles * kLanes16Rows * a.row_bytes);
    // The whole matrix as far as the unpackers look: rows [0, tiled_end).
    Tensor packed = Tensor::matrix(a.w, a.dtype, a.n_in, a.lane_rows);
    packed.layout = lanes16_layout(a.dtype);
    for (int64_t r = r0; r < tiled_end && rows_tokens > 0; r += kUnpackTiles * kLanes16Rows) {
      const int64_t n = std::min(kUnpackTiles * kLanes16Rows, tiled_end - r);
      unpack_lanes16_rows(packed, r, n, buf);
      rows_at(buf, r);
      isa.compute_rows(rows, r, r + n);
    }
    rows.n_tokens = a.n_tokens;
  }
  if (std::max(r0, a.lane_rows) < r1) {
    rows_at(a.lane_tail, a.lane_rows);
    isa.compute_rows(rows, std::max(r0, a.lane_rows), r1);
  }
}

// Outputs [r0, r1) of `a` with the variant's kernels.
void compute_range(const MatmulIsa& isa, const MatmulArgs& a, int64_t r0, int64_t r1) {
  if (a.lane_rows > 0) return compute_lane_rows(isa, a, r0, r1);
  isa.compute_rows(a, r0, r1);
}

void compute_chunks(Job& job) {
  int i = 0;  // chunks are claimed in ascending order, so the matrix only moves forward
  for (;;) {
    const int64_t c = job.next_chunk.fetch_add(1, std::memory_order_relaxed);
    if (c >= job.first_chunk[job.n_matrices]) return;
    while (c >= job.first_chunk[i + 1]) ++i;
    const MatmulArgs& a = *job.args[i];
    const int64_t r0 = (c - job.first_chunk[i]) * job.rows_per_chunk[i];
    const int64_t r1 = r0 + job.rows_per_chunk[i] < a.n_out ? r0 + job.rows_per_chunk[i] : a.n_out;
    compute_range(*job.isa, a, r0, r1);
  }
}

}  // namespace

XLayout x_layout(DType dtype, int64_t n_in) {
  XLayout l;
  l.n_in = n_in;
  // 64-byte aligned, an odd number of cache lines.
  auto row_stride = [](int64_t bytes) {
    const int64_t lines = (bytes + 63) / 64;
    return (lines % 2 == 0 ? lines + 1 : lines) * 64;
  };
  auto round8 = [](int64_t v) { return (v + 7) / 8 * 8; };
  switch (dtype) {
    case DType::F32:
      l.format = XFormat::F32;
      l.stride = row_stride(n_in * static_cast<int64_t>(sizeof(float)));
      return l;
    case DType::BF16: {
      const int64_t n32 = (n_in + kBf16Step - 1) / kBf16Step * kBf16Step;
      l.format = XFormat::BF16;
      l.f32_offset = align64(n32 * static_cast<int64_t>(sizeof(uint16_t)));
      l.stride = row_stride(l.f32_offset + n32 * static_cast<int64_t>(sizeof(float)));
      return l;
    }
    case DType::F16:
      l.format = XFormat::F16;
      l.f32_offset = align64(n_in * static_cast<int64_t>(sizeof(uint16_t)));
      l.stride = row_stride(l.f32_offset + n_in * static_cast<int64_t>(sizeof(float)));
      return l;
    case DType::Q8_0:
      l.format = XFormat::Q8_32;
      l.block = 32;
      break;
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::IQ4_NL:
    case DType::MXFP4:
      l.format = XFormat::Q8_32_NIB;
      l.block = 32;
      break;
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS:
      l.format = XFormat::Q8_256;
      l.block = kQK_K;
      break;
    default:
      TC_CHECK(false, "matmul: unsupported weight dtype");
  }
  TC_CHECK(n_in % l.block == 0, "matmul: n_in is not a multiple of the dtype's block size");
  l.d_offset = align64(n_in);
  l.sum32_offset = align64(l.d_offset + round8(n_in / l.block) * static_cast<int64_t>(sizeof(float)));
  l.sum16_offset = align64(l.sum32_offset + round8(n_in / 32) * static_cast<int64_t>(sizeof(int32_t)));
  const int64_t sum16_bytes = l.format == XFormat::Q8_256 ? n_in / 16 * static_cast<int64_t>(sizeof(int16_t)) : 0;
  const int64_t group_bytes = l.format == XFormat::Q8_32_NIB ? round8(n_in / 32) * 4 : 0;  // f32 / i32 each
  l.gd_offset = align64(l.sum16_offset + sum16_bytes);
  l.gs8_offset = align64(l.gd_offset + group_bytes);
  l.stride = row_stride(l.gs8_offset + group_bytes);
  return l;
}

bool isa_supported(const char* name) {
  const int level = level_of(name);
  return level >= 0 && variant(level) != nullptr;
}

const MatmulIsa& isa_for_request(const char* request) {
  const MatmulIsa& best = best_variant();
  if (request == nullptr || *request == '\0') return best;
  const int level = level_of(request);
  if (level < 0) {
    std::fprintf(stderr, "thermocline: THERMOCLINE_ISA=%s is not one of portable, avx2, avx512, avx512bf16; using %s\n", request,
                 best.name);
    return best;
  }
  if (level > level_of(best.name)) {
    std::fprintf(stderr, "thermocline: THERMOCLINE_ISA=%s is not supported by this CPU; using %s\n", request,
                 best.name);
    return best;
  }
  return *variant(level);
}

namespace {

// Fills the shape fields of `a` from w and checks them; the caller sets rows
// and n_out.
void describe_weights(const Tensor& w, const float* x, int64_t n_tokens, float* y, MatmulArgs& a) {
  TC_CHECK(w.data != nullptr && x != nullptr, "matmul: null pointer");
  TC_CHECK(n_tokens >= 0, "matmul: negative token count");
  a.dtype = w.dtype;
  a.w = static_cast<const std::byte*>(w.data);
  a.row_bytes = w.row_bytes;
  a.n_in = w.n_cols();
  a.xl = x_layout(w.dtype, a.n_in);
  a.n_tokens = n_tokens;
  a.y = y;
  TC_CHECK(a.row_bytes >= row_bytes(w.dtype, a.n_in), "matmul: row_bytes smaller than a packed row");
  if (w.layout != WeightLayout::Rows) {
    TC_CHECK(has_lanes16(w.dtype) && w.layout == lanes16_layout(w.dtype) &&
                 a.row_bytes == row_bytes(w.dtype, a.n_in),
             "matmul: a lane-tile matrix must be of a dtype with lane tiles, in its own layout, with plain rows");
    TC_CHECK(reinterpret_cast<uintptr_t>(a.w) % 64 == 0, "matmul: a lane-tile matrix must be 64-byte aligned");
    a.lane_rows = w.n_rows() / kLanes16Rows * kLanes16Rows;
    a.lane_tile_bytes = lanes16_tile_bytes(w.dtype, a.n_in);
    a.lane_tail = a.w + a.lane_rows / kLanes16Rows * a.lane_tile_bytes;
  }
}

// Whether a's kernel reads LaneX activations: Q4_0Lanes16 and Q4_1Lanes16.
bool uses_lane_x(const MatmulArgs& a) {
  return a.lane_rows > 0 && (a.dtype == DType::Q4_0 || a.dtype == DType::Q4_1);
}

// Quantizes x once and computes every output of the n matrices `as` (all of
// one activation layout and token count) on the pool, as one job.
void run_many(const MatmulIsa& isa, MatmulArgs* as, int n, const float* x, ThreadPool* pool) {
  const int64_t n_tokens = as[0].n_tokens;
  int64_t total_out = 0;
  for (int i = 0; i < n; ++i) total_out += as[i].n_out;
  if (n_tokens == 0 || total_out == 0) return;

  bool lane_x = false;
  for (int i = 0; i < n; ++i) {
    lane_x |= uses_lane_x(as[i]) && n_tokens <= kLaneXTokens && isa.q4_lanes16;
  }
  thread_local Scratch scratch;
  const int64_t xq_bytes = align64(as[0].xl.stride * n_tokens);
  std::byte* xq = scratch.get(xq_bytes + (lane_x ? lane_x_bytes(as[0].n_in / 32) : 0));
  for (int i = 0; i < n; ++i) as[i].xq = xq;

  const int nt = pool != nullptr ? pool->n_threads() : 1;
  Job job;
  job.isa = &isa;
  job.x = x;
  job.xq = xq;
  job.n_tokens = n_tokens;
  job.xl_args = &as[0];
  job.n_matrices = n;
  for (int i = 0; i < n; ++i) {
    // About kChunksPerThread chunks per thread over the whole job, in
    // proportion to each matrix's rows.
    const int64_t grains = (as[i].n_out + kRowGrain - 1) / kRowGrain;
    const int64_t share_chunks = std::max<int64_t>(1, nt * kChunksPerThread * as[i].n_out / total_out);
    const int64_t grains_per_chunk = std::max<int64_t>(1, grains / share_chunks);
    job.args[i] = &as[i];
    job.rows_per_chunk[i] = grains_per_chunk * kRowGrain;
    job.first_chunk[i + 1] = job.first_chunk[i] + (grains + grains_per_chunk - 1) / grains_per_chunk;
  }
  Job* jp = &job;
  if (nt == 1 || n_tokens < kParallelQuantizeTokens) {
    isa.quantize_x(as[0].xl, x, 0, n_tokens, xq);
  } else {
    pool->run([jp](int t, int nthreads) {
      int64_t t0, t1;
      share(jp->n_tokens, t, nthreads, t0, t1);
      if (t0 < t1) jp->isa->quantize_x(jp->xl_args->xl, jp->x, t0, t1, jp->xq);
    });
  }
  if (lane_x) {
    build_lane_x(as[0], xq + xq_bytes);
    for (int i = 0; i < n; ++i) {
      if (uses_lane_x(as[i])) as[i].lane_x = xq + xq_bytes;
    }
  }
  if (nt == 1 || job.first_chunk[n] == 1) {
    for (int i = 0; i < n; ++i) compute_range(isa, as[i], 0, as[i].n_out);
  } else {
    pool->run([jp](int, int) { compute_chunks(*jp); });
  }
}

void run(const MatmulIsa& isa, MatmulArgs& a, const float* x, ThreadPool* pool) { run_many(isa, &a, 1, x, pool); }

}  // namespace

void matmul_with(const MatmulIsa& isa, const Tensor& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool) {
  TC_CHECK(y != nullptr, "matmul: null pointer");
  MatmulArgs a;
  describe_weights(w, x, n_tokens, y, a);
  a.n_out = w.n_rows();
  run(isa, a, x, pool);
}

void matmul_rows_with(const MatmulIsa& isa, const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows,
                      int64_t n_rows, float* y, ThreadPool* pool) {
  TC_CHECK(n_rows >= 0 && ((rows != nullptr && y != nullptr) || n_rows == 0), "matmul_rows: null or negative row set");
  TC_CHECK(w.layout == WeightLayout::Rows, "matmul_rows: the weights must be in row layout");
  MatmulArgs a;
  describe_weights(w, x, n_tokens, y, a);
  const int64_t n_weight_rows = w.n_rows();
  for (int64_t k = 0; k < n_rows; ++k) {
    TC_CHECK(rows[k] >= 0 && rows[k] < n_weight_rows, "matmul_rows: row index outside the weight matrix");
  }
  a.rows = rows;
  a.n_out = n_rows;
  run(isa, a, x, pool);
}

void matmul_many_with(const MatmulIsa& isa, std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens,
                      ThreadPool* pool) {
  MatmulArgs as[kMaxSharedInput];
  size_t done = 0;
  // Runs of up to kMaxSharedInput neighbours with one activation layout
  // share a job; a matrix that prepares x differently starts a new one.
  while (done < targets.size()) {
    int n = 0;
    for (; done + n < targets.size() && n < kMaxSharedInput; ++n) {
      const MatmulTarget& t = targets[done + n];
      TC_CHECK(t.w != nullptr && t.y != nullptr, "matmul: null pointer");
      MatmulArgs a;
      describe_weights(*t.w, x, n_tokens, t.y, a);
      a.n_out = t.w->n_rows();
      if (n > 0 && !(a.xl == as[0].xl && a.n_in == as[0].n_in)) break;
      as[n] = a;
    }
    run_many(isa, as, n, x, pool);
    done += static_cast<size_t>(n);
  }
}

// Chosen on first use, for the life of the process.
const MatmulIsa& chosen_isa() {
  static const MatmulIsa& isa = isa_for_request(std::getenv("THERMOCLINE_ISA"));
  return isa;
}

}  // namespace detail

void matmul(const Tensor& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  detail::matmul_with(detail::chosen_isa(), w, x, n_tokens, y, &pool);
}

void matmul_many(std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens, ThreadPool& pool) {
  detail::matmul_many_with(detail::chosen_isa(), targets, x, n_tokens, &pool);
}

void matmul_reference(const Tensor& w, const float* x, int64_t n_tokens, float* y) {
  detail::matmul_with(detail::isa_portable(), w, x, n_tokens, y, nullptr);
}

std::string matmul_isa() { return detail::chosen_isa().name; }

}  // namespace tc::kernels
