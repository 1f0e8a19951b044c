// matmul_bench: times the CPU matmul per weight dtype and ISA variant, as
// decode GEMV (1 token; GB/s of weight bytes streamed from DRAM) and prefill
// GEMM (512 tokens; GFLOP/s), on the pool's threads.
//   matmul_bench [-t THREADS] [-r ROUNDS] [--isa LIST] [--dtype LIST]
//                [--shape NOUTxNIN,...] [--tokens N] [--no-gemm] [--no-gemv]
//                [--batch LIST] [--gemv-mb MB] [--ggml DIR]
// LIST is comma separated (e.g. --isa avx2 --dtype f16,q8_0).
// --ggml DIR also times llama.cpp's ggml_mul_mat from the prebuilt CPU
// libraries in DIR (libggml-base.so and libggml-cpu-haswell.so, e.g. the
// npm package @node-llama-cpp/linux-x64), loaded with dlopen: row "ggml"
// (plain weight buffer) and, for the types llama.cpp repacks at load time on
// this CPU, "ggml-repack" (its CPU_REPACK buffer type), with the same thread
// count and a persistent ggml threadpool.
// Shared machines see memory bandwidth drift by 30% within seconds, so GEMV
// runs in ROUNDS interleaved rounds, each also timing a read-bandwidth probe
// (as bench/membw); the table gives medians over rounds, the best round, and
// the median over rounds of GEMV GB/s as a share of that round's probe.
// GEMM is timed ROUNDS times per variant (median), the variants taking turns.
// --batch 1,2,4,8 also times small batches (the server's batched decode) in
// the same interleaved rounds, weights from DRAM, and prints each one's time
// as a multiple of the 1-token time: a kernel that reads the weights once
// per call stays far below n x (Thermocline variants only).
#include <dlfcn.h>
#include <emmintrin.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "bench/bench_timing.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/lanes16.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/dtype.h"

namespace {

using namespace tc::kernels;
namespace detail = tc::kernels::detail;
using tc::bench::Clock;
using tc::bench::median;
using tc::bench::fill_random;
using tc::bench::probe_read;
using tc::bench::seconds_since;

// GEMV cycles through copies of a matrix adding up to at least this many
// bytes, 8x the last-level cache here, so weights come from DRAM.
// --gemv-mb sets it (e.g. 1: one copy, cache-resident, to time compute).
int64_t g_gemv_min_bytes = 256ll << 20;
// Timed GEMV calls per (variant, round): at least this long.
constexpr double kGemvRoundSeconds = 0.15;
constexpr int64_t kProbeBytes = 512ll << 20;

struct Options {
  int n_threads = 2;
  int rounds = 7;
  std::vector<std::string> isas;
  std::vector<std::string> dtypes = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_K", "q6_K"};
  std::vector<std::pair<int64_t, int64_t>> shapes = {{4096, 4096}, {11008, 4096}};  // {n_out, n_in}
  int64_t gemm_tokens = 512;
  std::vector<int64_t> batches = {1};  // GEMV token counts; the first must be 1
  bool gemm = true;
  bool gemv = true;
  std::string ggml_dir;
};

constexpr const char* kUsage =
    "usage: matmul_bench [-t THREADS] [-r ROUNDS] [--isa LIST] [--dtype LIST] [--shape NOUTxNIN,...]\n"
    "                    [--tokens N] [--no-gemm] [--no-gemv] [--batch LIST] [--gemv-mb MB]\n"
    "                    [--ggml DIR]\n";

Options parse(int argc, char** argv) {
  using tc::bench::split_list;
  Options o;
  tc::bench::ArgReader args(argc, argv, kUsage);
  while (args.next()) {
    const std::string& a = args.flag();
    if (a == "-t") {
      o.n_threads = args.int_value();
    } else if (a == "-r") {
      o.rounds = std::max(1, args.int_value());
    } else if (a == "--isa") {
      o.isas = split_list(args.value());
    } else if (a == "--dtype") {
      o.dtypes = split_list(args.value());
    } else if (a == "--shape") {
      o.shapes.clear();
      for (const auto& s : split_list(args.value())) {
        const auto x = s.find('x');
        if (x == std::string::npos) args.usage();
        o.shapes.push_back({std::atoll(s.substr(0, x).c_str()), std::atoll(s.substr(x + 1).c_str())});
      }
    } else if (a == "--tokens") {
      o.gemm_tokens = args.int64_value();
    } else if (a == "--no-gemm") {
      o.gemm = false;
    } else if (a == "--no-gemv") {
      o.gemv = false;
    } else if (a == "--gemv-mb") {
      g_gemv_min_bytes = args.int64_value() << 20;
    } else if (a == "--batch") {
      o.batches = {1};
      for (const auto& b : split_list(args.value())) {
        if (std::atoll(b.c_str()) > 1) o.batches.push_back(std::atoll(b.c_str()));
      }
    } else if (a == "--ggml") {
      o.ggml_dir = args.value();
    } else {
      args.usage();
    }
  }
  if (o.isas.empty()) {
    for (const char* name : {"portable", "avx2", "avx512", "avx512bf16", "amx"}) {
      if (detail::isa_supported(name)) o.isas.push_back(name);
    }
  }
  for (const auto& name : o.isas) {
    if (!detail::isa_supported(name.c_str())) {
      std::fprintf(stderr, "matmul_bench: variant %s is not supported on this CPU\n", name.c_str());
      std::exit(2);
    }
  }
  return o;
}

// A weight matrix and copies of it, 64-byte aligned.
// (dtypes "q4_0x16", "q4_1x16", "q8_0x16" and "q4_kx16": Q4_0, Q4_1, Q8_0
// and Q4_K repacked into their lane layouts, kernels/cpu/lanes16.h.)
struct Matrix {
  DType dtype;
  int64_t n_out, n_in;
  int64_t copy_bytes;
  int n_copies;
  std::unique_ptr<std::byte[]> storage;
  std::byte* bytes;
  bool lanes16 = false;

  Tensor view(int copy) const {
    Tensor t = Tensor::matrix(bytes + copy * copy_bytes, dtype, n_in, n_out, MemoryKind::Host);
    if (lanes16) {
      t.layout = lanes16_layout(dtype);
    }
    return t;
  }
  std::string dtype_label() const {
    return std::string(dtype_name(dtype)) + (lanes16 ? "x16" : "");
  }
};

int64_t matrix_bytes(DType dtype, int64_t n_out, int64_t n_in, bool lanes16) {
  if (!lanes16) return row_bytes(dtype, n_in) * n_out;
  return (lanes16_bytes(dtype, n_in, n_out) + 63) / 64 * 64;
}

Matrix make_matrix(DType dtype, int64_t n_out, int64_t n_in, int n_copies, bool lanes16, ThreadPool& pool) {
  Matrix m{dtype, n_out, n_in, matrix_bytes(dtype, n_out, n_in, lanes16), n_copies, nullptr, nullptr, lanes16};
  m.storage.reset(new std::byte[static_cast<size_t>(m.copy_bytes * n_copies + 64)]);
  m.bytes = m.storage.get() + (64 - reinterpret_cast<uintptr_t>(m.storage.get()) % 64) % 64;
  const int64_t rb = row_bytes(dtype, n_in);
  std::vector<std::byte> rows(static_cast<size_t>(lanes16 ? rb * n_out : 0));
  std::byte* row_dst = lanes16 ? rows.data() : m.bytes;
  pool.run([&](int t, int nt) {
    std::vector<float> row(static_cast<size_t>(n_in));
    for (int64_t r = n_out * t / nt; r < n_out * (t + 1) / nt; ++r) {
      fill_random(row.data(), n_in, static_cast<uint64_t>(r) + 1);
      quantize_row(dtype, row.data(), row_dst + r * rb, n_in);
    }
  });
  if (lanes16) pack_lanes16(Tensor::matrix(rows.data(), dtype, n_in, n_out), m.bytes, &pool);
  pool.run([&](int t, int nt) {
    const int64_t b0 = m.copy_bytes * t / nt, b1 = m.copy_bytes * (t + 1) / nt;
    for (int c = 1; c < n_copies; ++c) {
      std::memcpy(m.bytes + c * m.copy_bytes + b0, m.bytes + b0, static_cast<size_t>(b1 - b0));
    }
  });
  return m;
}

// ---- llama.cpp's ggml CPU backend, loaded at run time ----

// The few ggml entry points used, declared as ggml.h / ggml-backend.h /
// ggml-cpu.h do; only ggml_init_params crosses by value (3 fields, stable).
struct GgmlInitParams {
  size_t mem_size;
  void* mem_buffer;
  bool no_alloc;
};

class Ggml {
 public:
  bool load(const std::string& dir, int n_threads) {
    base_ = dlopen((dir + "/libggml-base.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    cpu_ = base_ ? dlopen((dir + "/" + (std::getenv("TC_GGML_CPU") ? std::getenv("TC_GGML_CPU") : "libggml-cpu-haswell.so")).c_str(), RTLD_NOW | RTLD_GLOBAL) : nullptr;
    if (cpu_ == nullptr) {
      std::fprintf(stderr, "matmul_bench: cannot load ggml from %s: %s\n", dir.c_str(), dlerror());
      return false;
    }
    bool ok = true;
    auto sym = [&](void* lib, const char* name) {
      void* f = dlsym(lib, name);
      if (f == nullptr) {
        std::fprintf(stderr, "matmul_bench: ggml symbol %s missing\n", name);
        ok = false;
      }
      return f;
    };
    init_ = reinterpret_cast<void* (*)(GgmlInitParams)>(sym(base_, "ggml_init"));
    new_tensor_2d_ = reinterpret_cast<void* (*)(void*, int, int64_t, int64_t)>(sym(base_, "ggml_new_tensor_2d"));
    mul_mat_ = reinterpret_cast<void* (*)(void*, void*, void*)>(sym(base_, "ggml_mul_mat"));
    new_graph_ = reinterpret_cast<void* (*)(void*)>(sym(base_, "ggml_new_graph"));
    expand_ = reinterpret_cast<void (*)(void*, void*)>(sym(base_, "ggml_build_forward_expand"));
    get_data_ = reinterpret_cast<void* (*)(void*)>(sym(base_, "ggml_get_data"));
    nbytes_ = reinterpret_cast<size_t (*)(const void*)>(sym(base_, "ggml_nbytes"));
    graph_compute_ = reinterpret_cast<int (*)(void*, void*)>(sym(base_, "ggml_backend_graph_compute"));
    buft_alloc_ = reinterpret_cast<void* (*)(void*, size_t)>(sym(base_, "ggml_backend_buft_alloc_buffer"));
    buffer_base_ = reinterpret_cast<void* (*)(void*)>(sym(base_, "ggml_backend_buffer_get_base"));
    tensor_alloc_ = reinterpret_cast<int (*)(void*, void*, void*)>(sym(base_, "ggml_backend_tensor_alloc"));
    tensor_set_ = reinterpret_cast<void (*)(void*, const void*, size_t, size_t)>(sym(base_, "ggml_backend_tensor_set"));
    auto cpu_init = reinterpret_cast<void (*)()>(sym(cpu_, "ggml_cpu_init"));
    auto backend_init = reinterpret_cast<void* (*)()>(sym(cpu_, "ggml_backend_cpu_init"));
    auto set_threads = reinterpret_cast<void (*)(void*, int)>(sym(cpu_, "ggml_backend_cpu_set_n_threads"));
    auto tp_params_init = reinterpret_cast<void (*)(void*, int)>(sym(base_, "ggml_threadpool_params_init"));
    auto tp_new = reinterpret_cast<void* (*)(void*)>(sym(cpu_, "ggml_threadpool_new"));
    auto set_tp = reinterpret_cast<void (*)(void*, void*)>(sym(cpu_, "ggml_backend_cpu_set_threadpool"));
    tp_pause_ = reinterpret_cast<void (*)(void*)>(sym(cpu_, "ggml_threadpool_pause"));
    tp_resume_ = reinterpret_cast<void (*)(void*)>(sym(cpu_, "ggml_threadpool_resume"));
    repack_buft_ = reinterpret_cast<void* (*)()>(sym(cpu_, "_Z35ggml_backend_cpu_repack_buffer_typev"));
    if (!ok) return false;
    // Quiet: ggml logs every repacked tensor.
    if (auto log_set =
            reinterpret_cast<void (*)(void (*)(int, const char*, void*), void*)>(dlsym(base_, "ggml_log_set"))) {
      log_set([](int, const char*, void*) {}, nullptr);
    }
    cpu_init();
    // Which types ggml repacks on this CPU is decided inside it (null traits
    // for the others, which then crash in set_tensor): probe each in a child.
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K, DType::IQ4_NL, DType::MXFP4, DType::Q4_1, DType::Q5_0}) {
      std::fflush(nullptr);
      const pid_t pid = fork();
      if (pid == 0) {
        std::vector<std::byte> w(static_cast<size_t>(row_bytes(t, 256) * 8));
        std::vector<float> src(256 * 8, 0.25f);
        for (int r = 0; r < 8; ++r) quantize_row(t, src.data() + r * 256, w.data() + r * row_bytes(t, 256), 256);
        prepare(t, w.data(), 256, 8, 1, true);
        _exit(0);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) repacked_.push_back(t);
    }
    backend_ = backend_init();
    set_threads(backend_, n_threads);
    // ggml_threadpool_params is filled by ggml itself; this buffer is larger.
    alignas(64) static unsigned char tp_params[4096];
    tp_params_init(tp_params, n_threads);
    threadpool_ = tp_new(tp_params);
    set_tp(backend_, threadpool_);
    tp_pause_(threadpool_);
    return true;
  }

  // y = W x through one ggml graph. W's bytes are ours (the same block
  // layouts); `repack` places W in ggml's CPU_REPACK buffer type.
  struct MulMat {
    void* graph;
    void* x;
    void* y;
  };
  MulMat prepare(DType dtype, const std::byte* w_bytes, int64_t n_in, int64_t n_out, int64_t n_tok, bool repack) {
    const size_t w_bytes_n = static_cast<size_t>(row_bytes(dtype, n_in) * n_out);
    const size_t act = static_cast<size_t>(n_tok * (n_in + n_out)) * sizeof(float);
    void* ctx = init_({act + (repack ? 0 : w_bytes_n) + (16u << 20), nullptr, false});
    void* w = nullptr;
    if (repack) {
      void* wctx = init_({1u << 20, nullptr, true});
      w = new_tensor_2d_(wctx, static_cast<int>(dtype), n_in, n_out);
      void* buf = buft_alloc_(repack_buft_(), nbytes_(w) + 4096);
      tensor_alloc_(buf, w, buffer_base_(buf));
      tensor_set_(w, w_bytes, 0, w_bytes_n);  // repacks here
    } else {
      w = new_tensor_2d_(ctx, static_cast<int>(dtype), n_in, n_out);
      std::memcpy(get_data_(w), w_bytes, w_bytes_n);
    }
    void* x = new_tensor_2d_(ctx, 0 /* GGML_TYPE_F32 */, n_in, n_tok);
    void* y = mul_mat_(ctx, w, x);
    void* graph = new_graph_(ctx);
    expand_(graph, y);
    return {graph, x, y};
  }
  void set_x(const MulMat& m, const float* x, size_t n) { std::memcpy(get_data_(m.x), x, n * sizeof(float)); }
  void run(const MulMat& m) {
    if (graph_compute_(backend_, m.graph) != 0) {
      std::fprintf(stderr, "matmul_bench: ggml graph compute failed\n");
      std::exit(1);
    }
  }
  const float* y(const MulMat& m) { return static_cast<const float*>(get_data_(m.y)); }
  // ggml's workers poll for a while after each graph; paused, they leave
  // the cores to the other variants being timed.
  void resume() { tp_resume_(threadpool_); }
  void pause() { tp_pause_(threadpool_); }
  // Whether llama.cpp repacks weights of this type at load time on this CPU.
  bool repacks(DType t) const { return std::find(repacked_.begin(), repacked_.end(), t) != repacked_.end(); }

 private:
  void* base_ = nullptr;
  void* cpu_ = nullptr;
  void* backend_ = nullptr;
  void* threadpool_ = nullptr;
  void (*tp_pause_)(void*) = nullptr;
  void (*tp_resume_)(void*) = nullptr;
  void* (*init_)(GgmlInitParams) = nullptr;
  void* (*new_tensor_2d_)(void*, int, int64_t, int64_t) = nullptr;
  void* (*mul_mat_)(void*, void*, void*) = nullptr;
  void* (*new_graph_)(void*) = nullptr;
  void (*expand_)(void*, void*) = nullptr;
  void* (*get_data_)(void*) = nullptr;
  size_t (*nbytes_)(const void*) = nullptr;
  int (*graph_compute_)(void*, void*) = nullptr;
  void* (*buft_alloc_)(void*, size_t) = nullptr;
  void* (*buffer_base_)(void*) = nullptr;
  int (*tensor_alloc_)(void*, void*, void*) = nullptr;
  void (*tensor_set_)(void*, const void*, size_t, size_t) = nullptr;
  void* (*repack_buft_)() = nullptr;
  std::vector<DType> repacked_;
};

struct GemvResult {
  std::vector<double> ms, gbs, share;
};

// One way of computing y = W x for a matrix: a Thermocline variant or ggml.
struct Runner {
  std::string name;
  const detail::MatmulIsa* isa = nullptr;  // null: ggml
  std::vector<Ggml::MulMat> gemv;          // ggml: one graph per copy
  Ggml::MulMat gemm{};
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  ThreadPool pool(o.n_threads);
  std::printf(
      "matmul_bench: %d threads; GEMV: 1 token, weights from DRAM, %d interleaved rounds; "
      "GEMM: %lld tokens, median of %d alternating rounds\n",
      pool.n_threads(), o.rounds, static_cast<long long>(o.gemm_tokens), o.rounds);
  std::printf("chosen variant here: %s\n", matmul_isa().c_str());

  std::vector<Matrix> mats;
  for (const auto& name : o.dtypes) {
    // NAMEx16: NAME repacked into its lane layout.
    const bool lanes16 = name.size() > 3 && name.ends_with("x16");
    const auto dtype = dtype_from_name(lanes16 ? name.substr(0, name.size() - 3) : name);
    if (!dtype || (lanes16 && !has_lanes16(*dtype))) {
      std::fprintf(stderr, "matmul_bench: unknown dtype %s\n", name.c_str());
      return 2;
    }
    for (auto [n_out, n_in] : o.shapes) {
      const int64_t copy_bytes = matrix_bytes(*dtype, n_out, n_in, lanes16);
      const int n_copies =
          o.gemv ? static_cast<int>(std::max<int64_t>(1, (g_gemv_min_bytes + copy_bytes - 1) / copy_bytes)) : 1;
      mats.push_back(make_matrix(*dtype, n_out, n_in, n_copies, lanes16, pool));
    }
  }
  int64_t max_in = 0, max_out = 0;
  for (const auto& m : mats) {
    max_in = std::max(max_in, m.n_in);
    max_out = std::max(max_out, m.n_out);
  }
  const int64_t n_tok =
      std::max<int64_t>({int64_t{1}, o.gemm_tokens, *std::max_element(o.batches.begin(), o.batches.end())});
  std::vector<float> x(static_cast<size_t>(n_tok * max_in));
  fill_random(x.data(), static_cast<int64_t>(x.size()), 12345);
  std::vector<float> y(static_cast<size_t>(n_tok * max_out));

  Ggml ggml;
  const bool with_ggml = !o.ggml_dir.empty() && ggml.load(o.ggml_dir, pool.n_threads());
  if (!o.ggml_dir.empty() && !with_ggml) return 1;

  // Runners per matrix.
  std::vector<std::vector<Runner>> runners(mats.size());
  for (size_t mi = 0; mi < mats.size(); ++mi) {
    const Matrix& m = mats[mi];
    for (const auto& name : o.isas) runners[mi].push_back({name, &detail::isa_for_request(name.c_str()), {}, {}});
    if (!with_ggml) continue;
    for (bool repack : {false, true}) {
      if ((repack && !ggml.repacks(m.dtype)) || m.lanes16) continue;
      Runner r{repack ? "ggml-repack" : "ggml", nullptr, {}, {}};
      for (int c = 0; o.gemv && c < m.n_copies; ++c) {
        r.gemv.push_back(ggml.prepare(m.dtype, m.bytes + c * m.copy_bytes, m.n_in, m.n_out, 1, repack));
        ggml.set_x(r.gemv.back(), x.data(), static_cast<size_t>(m.n_in));
      }
      if (o.gemm) {
        r.gemm = ggml.prepare(m.dtype, m.bytes, m.n_in, m.n_out, n_tok, repack);
        ggml.set_x(r.gemm, x.data(), static_cast<size_t>(n_tok * m.n_in));
      }
      runners[mi].push_back(std::move(r));
    }
  }
  auto run_gemv = [&](const Matrix& m, Runner& r, int copy, int64_t n = 1) {
    if (r.isa != nullptr) {
      detail::matmul_with(*r.isa, m.view(copy), x.data(), n, y.data(), &pool);
    } else {
      ggml.run(r.gemv[static_cast<size_t>(copy)]);
    }
  };
  auto run_gemm = [&](const Matrix& m, Runner& r) {
    if (r.isa != nullptr) {
      detail::matmul_with(*r.isa, m.view(0), x.data(), n_tok, y.data(), &pool);
    } else {
      ggml.run(r.gemm);
    }
  };

  std::vector<std::vector<GemvResult>> gemv(mats.size());
  for (size_t mi = 0; mi < mats.size(); ++mi) gemv[mi].resize(runners[mi].size());
  // Small batches: [matrix][runner][batch index] median ms per round.
  std::vector<std::vector<std::vector<std::vector<double>>>> batch_ms(mats.size());
  for (size_t mi = 0; mi < mats.size(); ++mi) {
    batch_ms[mi].assign(runners[mi].size(), std::vector<std::vector<double>>(o.batches.size()));
  }
  std::vector<double> probe;
  if (o.gemv) {
    std::unique_ptr<std::byte[]> probe_buf(new std::byte[static_cast<size_t>(kProbeBytes + 64)]);
    std::byte* pb = probe_buf.get() + (64 - reinterpret_cast<uintptr_t>(probe_buf.get()) % 64) % 64;
    pool.run([&](int t, int nt) {
      const int64_t b = kProbeBytes * t / nt, e = kProbeBytes * (t + 1) / nt;
      std::memset(pb + b, t + 1, static_cast<size_t>(e - b));
    });
    for (int round = 0; round < o.rounds; ++round) {
      probe_read(pb, kProbeBytes, pool);  // warm
      const double bw = probe_read(pb, kProbeBytes, pool);
      probe.push_back(bw);
      for (size_t mi = 0; mi < mats.size(); ++mi) {
        const Matrix& m = mats[mi];
        for (size_t ri = 0; ri < runners[mi].size(); ++ri) {
          Runner& r = runners[mi][ri];
          if (r.isa == nullptr) ggml.resume();
          for (int c = 0; c < m.n_copies; ++c) run_gemv(m, r, c);
          std::vector<double> calls;
          double total = 0;
          for (int i = 0; total < kGemvRoundSeconds || i < m.n_copies; ++i) {
            const auto t0 = Clock::now();
            run_gemv(m, r, i % m.n_copies);
            const double sec = seconds_since(t0);
            calls.push_back(sec);
            total += sec;
          }
          const double sec = median(calls);
          GemvResult& g = gemv[mi][ri];
          g.ms.push_back(sec * 1e3);
          g.gbs.push_back(static_cast<double>(m.copy_bytes) / sec * 1e-9);
          g.share.push_back(g.gbs.back() / bw);
          if (r.isa == nullptr) ggml.pause();
          for (size_t bi = 1; r.isa != nullptr && bi < o.batches.size(); ++bi) {
            std::vector<double> bcalls;
            double btotal = 0;
            for (int i = 0; btotal < kGemvRoundSeconds || i < m.n_copies; ++i) {
              const auto t0 = Clock::now();
              run_gemv(m, r, i % m.n_copies, o.batches[bi]);
              const double bsec = seconds_since(t0);
              bcalls.push_back(bsec);
              btotal += bsec;
            }
            batch_ms[mi][ri][bi].push_back(median(bcalls) * 1e3);
          }
          batch_ms[mi][ri][0].push_back(sec * 1e3);
        }
      }
    }
    std::printf("read bandwidth probe: median %.1f GB/s, range %.1f - %.1f over %d rounds\n", median(probe),
                *std::min_element(probe.begin(), probe.end()), *std::max_element(probe.begin(), probe.end()), o.rounds);
  }

  // GEMM: a matrix's runners take turns round after round, so that each
  // one's rounds spread over the same stretch of time (a shared machine's
  // speed drifts within seconds). The portable path is slow: one timed run
  // is enough to place it.
  std::vector<std::vector<std::vector<double>>> gemm_s(mats.size());
  for (size_t mi = 0; o.gemm && o.gemm_tokens > 0 && mi < mats.size(); ++mi) {
    gemm_s[mi].resize(runners[mi].size());
    auto timed = [&](Runner& r) {
      if (r.isa == nullptr) ggml.resume();
      const auto t0 = Clock::now();
      run_gemm(mats[mi], r);
      const double sec = seconds_since(t0);
      if (r.isa == nullptr) ggml.pause();
      return sec;
    };
    for (Runner& r : runners[mi]) timed(r);  // warm-up
    for (int k = 0; k < o.rounds; ++k) {
      for (size_t ri = 0; ri < runners[mi].size(); ++ri) {
        Runner& r = runners[mi][ri];
        if (r.name == "portable" && k > 0) continue;
        gemm_s[mi][ri].push_back(timed(r));
      }
    }
  }

  std::printf(
      "\n| variant | dtype | n_out x n_in | GEMV ms | GEMV GB/s | best GB/s | of read bw | GEMM ms | GEMM GFLOP/s "
      "| GEMM vs first |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  std::vector<float> y_first;
  for (size_t mi = 0; mi < mats.size(); ++mi) {
    const Matrix& m = mats[mi];
    for (size_t ri = 0; ri < runners[mi].size(); ++ri) {
      Runner& r = runners[mi][ri];
      std::string gemm_ms = "-", gemm_gf = "-", gemm_diff = "-";
      if (o.gemm && o.gemm_tokens > 0) {
        const double sec = median(gemm_s[mi][ri]);
        if (r.isa == nullptr) ggml.resume();
        run_gemm(m, r);  // this runner's output, for the comparison below
        if (r.isa == nullptr) ggml.pause();
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.1f", sec * 1e3);
        gemm_ms = buf;
        std::snprintf(buf, sizeof buf, "%.1f", 2.0 * static_cast<double>(m.n_in * m.n_out * n_tok) / sec * 1e-9);
        gemm_gf = buf;
        // Max |y - y_first| / max |y_first| against the first variant's output:
        // every row times the same product.
        const float* yr = r.isa != nullptr ? y.data() : ggml.y(r.gemm);
        const size_t ny = static_cast<size_t>(n_tok * m.n_out);
        if (ri == 0) {
          y_first.assign(yr, yr + ny);
        } else {
          double dmax = 0, ymax = 0;
          for (size_t i = 0; i < ny; ++i) {
            dmax = std::max(dmax, static_cast<double>(std::fabs(yr[i] - y_first[i])));
            ymax = std::max(ymax, static_cast<double>(std::fabs(y_first[i])));
          }
          std::snprintf(buf, sizeof buf, "%.1e", dmax / ymax);
          gemm_diff = buf;
        }
      }
      std::string gv_ms = "-", gv_gbs = "-", gv_best = "-", gv_share = "-";
      if (o.gemv) {
        const GemvResult& g = gemv[mi][ri];
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3f", median(g.ms));
        gv_ms = buf;
        std::snprintf(buf, sizeof buf, "%.1f", median(g.gbs));
        gv_gbs = buf;
        std::snprintf(buf, sizeof buf, "%.1f", *std::max_element(g.gbs.begin(), g.gbs.end()));
        gv_best = buf;
        std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * median(g.share));
        gv_share = buf;
      }
      std::printf("| %s | %s | %lld x %lld | %s | %s | %s | %s | %s | %s | %s |\n", r.name.c_str(),
                  m.dtype_label().c_str(), static_cast<long long>(m.n_out),
                  static_cast<long long>(m.n_in), gv_ms.c_str(), gv_gbs.c_str(), gv_best.c_str(), gv_share.c_str(),
                  gemm_ms.c_str(), gemm_gf.c_str(), gemm_diff.c_str());
      std::fflush(stdout);
    }
  }
  if (o.gemv && o.batches.size() > 1) {
    std::printf("\nSmall batches (weights from DRAM): median ms per call, and as a multiple of 1 token\n\n");
    std::printf("| variant | dtype | n_out x n_in |");
    for (int64_t b : o.batches) std::printf(" n=%lld |", static_cast<long long>(b));
    std::printf("\n| --- | --- | --- |");
    for (size_t bi = 0; bi < o.batches.size(); ++bi) std::printf(" --- |");
    std::printf("\n");
    for (size_t mi = 0; mi < mats.size(); ++mi) {
      const Matrix& m = mats[mi];
      for (size_t ri = 0; ri < runners[mi].size(); ++ri) {
        if (runners[mi][ri].isa == nullptr) continue;
        std::printf("| %s | %s | %lld x %lld |", runners[mi][ri].name.c_str(),
                    m.dtype_label().c_str(), static_cast<long long>(m.n_out),
                    static_cast<long long>(m.n_in));
        const double one = median(batch_ms[mi][ri][0]);
        for (size_t bi = 0; bi < o.batches.size(); ++bi) {
          const double ms = median(batch_ms[mi][ri][bi]);
          std::printf(" %.3f (%.2fx) |", ms, ms / one);
        }
        std::printf("\n");
      }
    }
  }
  return 0;
}
