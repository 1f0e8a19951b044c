// sparse_ffn_bench: the sparse (neuron-aware) FFN against the dense one on
// the CPU, 7B shape by default (n_embd 4096, n_ff 11008): gate + up as
// gathered GEMVs over the active neurons plus the axpy down projection over
// ffn_down_t, against dense matmuls of gate, up and down. Weights come from
// DRAM: every call draws a fresh random active set (sorted, as a predictor's
// mask scan yields it) and cycles through copies of the FFN adding up to at
// least 256 MiB.
//   sparse_ffn_bench [-t LIST] [-r ROUNDS] [--dtype LIST] [--active LIST]
//                    [--batch LIST] [--batch-active LIST] [--shape EMBDxFF]
// LISTs are comma separated: -t 1,2 --dtype f16,q4_0 --active 5,10,20,50,100
// (percent of n_ff per token) --batch 1,2,4,8 --batch-active 5,10,20.
// Shared machines see memory bandwidth drift within seconds, so each round
// times a read-bandwidth probe (as bench/membw: SSE2 loads summed over 512
// MiB on the pool) and then dense and sparse calls interleaved; tables give
// medians over rounds. GB/s counts the weight bytes actually read: the
// gathered rows of gate, up and ffn_down_t for sparse, the whole matrices
// for dense. The batch table gives n tokens whose active sets are drawn
// independently: the gathered set is their union, and a token's activation
// is zero outside its own set (skipped by the axpy).
#include <emmintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "bench/bench_timing.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/sparse_ffn.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/dtype.h"

namespace {

using namespace tc::kernels;
using tc::bench::Clock;
using tc::bench::median;
using tc::bench::fill_random;
using tc::bench::probe_read;
using tc::bench::seconds_since;

constexpr int64_t kMinWeightBytes = 256ll << 20;  // copies of the FFN add up to this
constexpr int64_t kProbeBytes = 512ll << 20;
constexpr int kSetsPerConfig = 16;             // random active sets drawn per (active %, batch)
constexpr double kMinSecondsPerTiming = 0.05;  // calls per timed block: at least this long

struct Options {
  std::vector<int> threads = {1, 2};
  int rounds = 7;
  std::vector<std::string> dtypes = {"f16", "q4_0"};
  std::vector<double> active = {5, 10, 20, 50, 100};
  std::vector<int64_t> batches = {1, 2, 4, 8};
  std::vector<double> batch_active = {5, 10, 20};
  int64_t n_embd = 4096;
  int64_t n_ff = 11008;
};

constexpr const char* kUsage =
    "usage: sparse_ffn_bench [-t LIST] [-r ROUNDS] [--dtype LIST] [--active LIST] [--batch LIST]\n"
    "                        [--batch-active LIST] [--shape EMBDxFF]\n";

Options parse(int argc, char** argv) {
  using tc::bench::split_list;
  Options o;
  tc::bench::ArgReader args(argc, argv, kUsage);
  while (args.next()) {
    const std::string& a = args.flag();
    if (a == "-t") {
      o.threads.clear();
      for (const auto& s : split_list(args.value())) o.threads.push_back(std::max(1, std::atoi(s.c_str())));
    } else if (a == "-r") {
      o.rounds = std::max(1, args.int_value());
    } else if (a == "--dtype") {
      o.dtypes = split_list(args.value());
    } else if (a == "--active") {
      o.active.clear();
      for (const auto& s : split_list(args.value())) o.active.push_back(std::atof(s.c_str()));
    } else if (a == "--batch") {
      o.batches.clear();
      for (const auto& s : split_list(args.value())) o.batches.push_back(std::max<int64_t>(1, std::atoll(s.c_str())));
    } else if (a == "--batch-active") {
      o.batch_active.clear();
      for (const auto& s : split_list(args.value())) o.batch_active.push_back(std::atof(s.c_str()));
    } else if (a == "--shape") {
      const std::string s = args.value();
      const auto x = s.find('x');
      if (x == std::string::npos) args.usage();
      o.n_embd = std::atoll(s.substr(0, x).c_str());
      o.n_ff = std::atoll(s.substr(x + 1).c_str());
    } else {
      args.usage();
    }
  }
  return o;
}

// Bytes on 2 MiB pages where the kernel allows (madvise): the engine's
// weights are a file mapping that the kernel maps with 2 MiB pages
// (FilePmdMapped in /proc/PID/smaps), and gathered rows, one jump per row,
// pay a page walk per row on 4 KiB pages.
struct Bytes {
  static constexpr size_t kAlign = size_t{2} << 20;
  explicit Bytes(int64_t n) : size(round_up(static_cast<size_t>(n))) {
    data = static_cast<std::byte*>(std::aligned_alloc(kAlign, size));
    if (data == nullptr) throw std::bad_alloc();
    ::madvise(data, size, MADV_HUGEPAGE);
  }
  ~Bytes() { std::free(data); }
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;
  static size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
  size_t size;
  std::byte* data;
};

// A matrix of n_rows rows of n_cols, random, in `dtype`, written by the pool.
Tensor make_matrix(Bytes& mem, int64_t offset, DType dtype, int64_t n_cols, int64_t n_rows, uint64_t seed,
                   ThreadPool& pool) {
  std::byte* base = mem.data + offset;
  const int64_t rb = row_bytes(dtype, n_cols);
  pool.run([&](int t, int nt) {
    std::vector<float> row(static_cast<size_t>(n_cols));
    for (int64_t r = n_rows * t / nt; r < n_rows * (t + 1) / nt; ++r) {
      fill_random(row.data(), n_cols, seed * 1000003 + static_cast<uint64_t>(r));
      quantize_row(dtype, row.data(), base + r * rb, n_cols);
    }
  });
  return Tensor::matrix(base, dtype, n_cols, n_rows);
}

// One copy of the FFN: gate and up [n_ff rows of n_embd], dense down
// [n_embd rows of n_ff] and PowerInfer's down_t [n_ff rows of n_embd].
struct Ffn {
  Tensor gate, up, down, down_t;
};

// The active sets of one configuration: per draw, the union of n_tokens
// independent random sets of `count` neurons (sorted), and activations
// f32 [n_tokens, n_union], nonzero only where the neuron is in the token's own set.
struct ActiveSets {
  std::vector<std::vector<int32_t>> rows;
  std::vector<std::vector<float>> a;
  double mean_union = 0;
};

ActiveSets draw_sets(int64_t n_ff, int64_t count, int64_t n_tokens, uint64_t seed) {
  ActiveSets s;
  std::mt19937_64 rng(seed);
  std::vector<int32_t> perm(static_cast<size_t>(n_ff));
  for (int d = 0; d < kSetsPerConfig; ++d) {
    std::vector<std::vector<char>> member(static_cast<size_t>(n_tokens), std::vector<char>(static_cast<size_t>(n_ff)));
    std::vector<char> any(static_cast<size_t>(n_ff));
    for (int64_t t = 0; t < n_tokens; ++t) {
      std::iota(perm.begin(), perm.end(), 0);
      for (int64_t i = 0; i < count; ++i) {  // partial Fisher-Yates
        std::swap(perm[static_cast<size_t>(i)],
                  perm[static_cast<size_t>(i + static_cast<int64_t>(rng() % static_cast<uint64_t>(n_ff - i)))]);
        member[static_cast<size_t>(t)][static_cast<size_t>(perm[static_cast<size_t>(i)])] = 1;
        any[static_cast<size_t>(perm[static_cast<size_t>(i)])] = 1;
      }
    }
    std::vector<int32_t> rows;
    for (int64_t i = 0; i < n_ff; ++i) {
      if (any[static_cast<size_t>(i)]) rows.push_back(static_cast<int32_t>(i));
    }
    std::vector<float> a(static_cast<size_t>(n_tokens) * rows.size());
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (size_t k = 0; k < rows.size(); ++k) {
        a[static_cast<size_t>(t) * rows.size() + k] =
            member[static_cast<size_t>(t)][static_cast<size_t>(rows[k])] ? 0.01f * static_cast<float>(1 + k % 7) : 0.0f;
      }
    }
    s.mean_union += static_cast<double>(rows.size()) / kSetsPerConfig;
    s.rows.push_back(std::move(rows));
    s.a.push_back(std::move(a));
  }
  return s;
}

// A timed configuration: dense or sparse, n_tokens, its active sets.
struct Config {
  bool sparse = false;
  int64_t n_tokens = 1;
  double active_pct = 100;
  const ActiveSets* sets = nullptr;  // sparse only
  std::vector<double> ms;            // per call, one entry per round
  std::vector<double> gbs;           // weight bytes read / time, per round
  std::vector<double> share;         // gbs / that round's probe
  std::vector<double> down_ms;       // sparse: the axpy's part of ms
  double down_seconds = 0;           // summed over the calls of the current timing
};

Config make_config(bool sparse, int64_t n_tokens, double active_pct, const ActiveSets* sets) {
  Config c;
  c.sparse = sparse;
  c.n_tokens = n_tokens;
  c.active_pct = active_pct;
  c.sets = sets;
  return c;
}

int64_t dense_bytes(const Ffn& f) {
  return row_bytes(f.gate.dtype, f.gate.ne[0]) * f.gate.ne[1] * 2 +
         row_bytes(f.down.dtype, f.down.ne[0]) * f.down.ne[1];
}
int64_t sparse_bytes(const Ffn& f, int64_t n_rows) {
  return n_rows * (2 * row_bytes(f.gate.dtype, f.gate.ne[0]) + row_bytes(f.down_t.dtype, f.down_t.ne[0]));
}

struct Scratch {
  std::vector<float> x, gate, up, h, y;
};

// One FFN call on copy `copy` (draw `draw` of the sets). Returns bytes read.
int64_t run_ffn(Config& c, const Ffn& f, int draw, Scratch& s, ThreadPool& pool) {
  const int64_t n_tokens = c.n_tokens;
  if (!c.sparse) {
    matmul(f.gate, s.x.data(), n_tokens, s.gate.data(), pool);
    matmul(f.up, s.x.data(), n_tokens, s.up.data(), pool);
    matmul(f.down, s.h.data(), n_tokens, s.y.data(), pool);
    return dense_bytes(f);
  }
  const auto& rows = c.sets->rows[static_cast<size_t>(draw)];
  const auto& a = c.sets->a[static_cast<size_t>(draw)];
  const auto n_rows = static_cast<int64_t>(rows.size());
  matmul_rows(f.gate, s.x.data(), n_tokens, rows.data(), n_rows, s.gate.data(), pool);
  matmul_rows(f.up, s.x.data(), n_tokens, rows.data(), n_rows, s.up.data(), pool);
  const auto t0 = Clock::now();
  axpy_rows(f.down_t, a.data(), n_tokens, rows.data(), n_rows, s.y.data(), pool);
  c.down_seconds += seconds_since(t0);
  return sparse_bytes(f, n_rows);
}

// Times calls of c until kMinSecondsPerTiming has passed (at least 3):
// returns ms per call and GB/s.
void time_config(Config& c, const std::vector<Ffn>& copies, int& copy, int& draw, Scratch& s, ThreadPool& pool,
                 double probe) {
  int64_t bytes = 0;
  int calls = 0;
  c.down_seconds = 0;
  const auto t0 = Clock::now();
  while (calls < 3 || seconds_since(t0) < kMinSecondsPerTiming) {
    copy = (copy + 1) % static_cast<int>(copies.size());
    draw = (draw + 1) % kSetsPerConfig;
    bytes += run_ffn(c, copies[static_cast<size_t>(copy)], draw, s, pool);
    ++calls;
  }
  const double sec = seconds_since(t0);
  c.ms.push_back(sec / calls * 1e3);
  c.down_ms.push_back(c.down_seconds / calls * 1e3);
  c.gbs.push_back(static_cast<double>(bytes) / sec * 1e-9);
  c.share.push_back(c.gbs.back() / probe);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::printf("sparse_ffn_bench: n_embd %lld, n_ff %lld, %d rounds, variant %s\n", static_cast<long long>(o.n_embd),
              static_cast<long long>(o.n_ff), o.rounds, matmul_isa().c_str());
  ThreadPool fill_pool(0);
  Bytes probe_buf(kProbeBytes);
  std::memset(probe_buf.data, 1, static_cast<size_t>(kProbeBytes));

  struct Row {
    std::string dtype;
    int threads;
    double probe;
    double dense_ms;
    std::vector<Config> configs;
  };
  std::vector<Row> main_rows, batch_rows;
  std::vector<std::unique_ptr<ActiveSets>> sets;

  for (const auto& name : o.dtypes) {
    const auto dtype = dtype_from_name(name);
    if (!dtype) {
      std::fprintf(stderr, "sparse_ffn_bench: unknown dtype %s\n", name.c_str());
      return 2;
    }
    // Weights: copies of the FFN adding up to kMinWeightBytes.
    const int64_t rb_embd = row_bytes(*dtype, o.n_embd), rb_ff = row_bytes(*dtype, o.n_ff);
    const int64_t copy_bytes = 3 * rb_embd * o.n_ff + rb_ff * o.n_embd;
    const int n_copies = static_cast<int>(std::max<int64_t>(1, (kMinWeightBytes + copy_bytes - 1) / copy_bytes));
    Bytes mem(copy_bytes * n_copies);
    std::vector<Ffn> copies;
    {
      Ffn f;
      int64_t off = 0;
      f.gate = make_matrix(mem, off, *dtype, o.n_embd, o.n_ff, 1, fill_pool);
      off += rb_embd * o.n_ff;
      f.up = make_matrix(mem, off, *dtype, o.n_embd, o.n_ff, 2, fill_pool);
      off += rb_embd * o.n_ff;
      f.down_t = make_matrix(mem, off, *dtype, o.n_embd, o.n_ff, 3, fill_pool);
      off += rb_embd * o.n_ff;
      f.down = make_matrix(mem, off, *dtype, o.n_ff, o.n_embd, 4, fill_pool);
      copies.push_back(f);
    }
    // Further copies (other "layers") hold the same values at other addresses.
    for (int c = 1; c < n_copies; ++c) {
      std::memcpy(mem.data + c * copy_bytes, mem.data, static_cast<size_t>(copy_bytes));
      Ffn f = copies[0];
      for (Tensor* t : {&f.gate, &f.up, &f.down_t, &f.down})
        t->data = static_cast<std::byte*>(t->data) + c * copy_bytes;
      copies.push_back(f);
    }
    const int64_t max_tokens = *std::max_element(o.batches.begin(), o.batches.end());
    Scratch s;
    s.x.resize(static_cast<size_t>(max_tokens * o.n_embd));
    s.h.resize(static_cast<size_t>(max_tokens * o.n_ff));
    fill_random(s.x.data(), static_cast<int64_t>(s.x.size()), 7);
    fill_random(s.h.data(), static_cast<int64_t>(s.h.size()), 8);
    s.gate.resize(static_cast<size_t>(max_tokens * o.n_ff));
    s.up.resize(s.gate.size());
    s.y.resize(static_cast<size_t>(max_tokens * o.n_embd));

    // The active sets, drawn once (kept in `sets` until the tables are printed).
    auto sets_for = [&](double pct, int64_t n_tokens) {
      const auto count = std::max<int64_t>(1, std::llround(pct / 100.0 * static_cast<double>(o.n_ff)));
      sets.push_back(std::make_unique<ActiveSets>(
          draw_sets(o.n_ff, count, n_tokens, static_cast<uint64_t>(pct * 1000) + static_cast<uint64_t>(n_tokens))));
      return sets.back().get();
    };

    for (int nt : o.threads) {
      ThreadPool pool(nt);
      Row main_row{name, nt, 0, 0, {}}, batch_row{name, nt, 0, 0, {}};
      main_row.configs.push_back(make_config(false, 1, 100, nullptr));
      for (double pct : o.active) main_row.configs.push_back(make_config(true, 1, pct, sets_for(pct, 1)));
      for (double pct : o.batch_active) {
        for (int64_t b : o.batches) batch_row.configs.push_back(make_config(true, b, pct, sets_for(pct, b)));
      }
      for (int64_t b : o.batches) batch_row.configs.push_back(make_config(false, b, 100, nullptr));
      std::vector<double> probes;
      int copy = 0, draw = 0;
      for (int r = 0; r < o.rounds; ++r) {
        const double probe = probe_read(probe_buf.data, kProbeBytes, pool);
        probes.push_back(probe);
        // Interleaved: dense, then each sparse configuration, in one round.
        for (auto& c : main_row.configs) time_config(c, copies, copy, draw, s, pool, probe);
        for (auto& c : batch_row.configs) time_config(c, copies, copy, draw, s, pool, probe);
      }
      main_row.probe = batch_row.probe = median(probes);
      main_rows.push_back(std::move(main_row));
      batch_rows.push_back(std::move(batch_row));
    }
  }

  std::printf(
      "\nDecode (1 token): gate + up + down, median ms per FFN call over rounds; GB/s of weight bytes read\n\n");
  std::printf(
      "| dtype | threads | read probe GB/s | active | rows read | dense ms | sparse ms (gate+up / down) | speedup | "
      "GB/s "
      "| %% of probe |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const auto& row : main_rows) {
    const Config& dense = row.configs[0];
    std::printf("| %s | %d | %.1f | dense | %lld | %.2f | | | %.1f | %.0f%% |\n", row.dtype.c_str(), row.threads,
                row.probe, static_cast<long long>(o.n_ff), median(dense.ms), median(dense.gbs),
                100 * median(dense.share));
    for (size_t i = 1; i < row.configs.size(); ++i) {
      const Config& c = row.configs[i];
      // Ratios per round (side by side), then the median.
      std::vector<double> ratio;
      for (size_t r = 0; r < c.ms.size(); ++r) ratio.push_back(dense.ms[r] / c.ms[r]);
      std::vector<double> up_ms;
      for (size_t r = 0; r < c.ms.size(); ++r) up_ms.push_back(c.ms[r] - c.down_ms[r]);
      std::printf("| %s | %d | %.1f | %.0f%% | %.0f | %.2f | %.2f (%.2f / %.2f) | %.2fx | %.1f | %.0f%% |\n",
                  row.dtype.c_str(), row.threads, row.probe, c.active_pct, c.sets->mean_union, median(dense.ms),
                  median(c.ms), median(up_ms), median(c.down_ms), median(ratio), median(c.gbs), 100 * median(c.share));
    }
  }

  std::printf(
      "\nBatches: n tokens with independent active sets (union gathered), median ms per FFN call;\n"
      "sparse / dense time (below 1: sparse faster)\n\n");
  std::printf("| dtype | threads | active per token | n_tokens | union | dense ms | sparse ms | sparse / dense |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const auto& row : batch_rows) {
    for (const Config& c : row.configs) {
      if (!c.sparse) continue;
      const Config* dense = nullptr;
      for (const Config& d : row.configs) {
        if (!d.sparse && d.n_tokens == c.n_tokens) dense = &d;
      }
      std::vector<double> ratio;
      for (size_t r = 0; r < c.ms.size(); ++r) ratio.push_back(c.ms[r] / dense->ms[r]);
      std::printf("| %s | %d | %.0f%% | %lld | %.0f%% | %.2f | %.2f | %.2f |\n", row.dtype.c_str(), row.threads,
                  c.active_pct, static_cast<long long>(c.n_tokens),
                  100.0 * c.sets->mean_union / static_cast<double>(o.n_ff), median(dense->ms), median(c.ms),
                  median(ratio));
    }
  }
  return 0;
}
