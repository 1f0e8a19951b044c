// attention_bench: decode attention (one new token per sequence) over f16
// (or q8_0) KV caches, as a decode step runs it (kernels::attention_batch),
// reported as the KV bytes it reads per second against the machine's read
// bandwidth; with --prefill, a whole prompt of each --ctx length instead
// (kernels::attention over its own causal context), reported in GFLOP/s of
// the scores and weighted sums.
//   attention_bench [-t THREADS] [-r REPEATS] [--ctx 256,1024,4096]
//                   [--shape 32x32x128,32x8x128,32x4x64] [--seqs 1,8] [--kv f16|q8_0] [--prefill]
// A shape is n_head x n_head_kv x head_dim. Each sequence has its own cache
// (Buffer::host, as the engine's KvCache), filled with seeded random
// values; enough layers of caches are cycled through that one pass over
// them is far larger than the last-level cache. Medians over the repeats.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "bench/bench_timing.h"
#include "kernels/buffer.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"

namespace {

using tc::bench::Clock;

constexpr const char* kUsage =
    "usage: attention_bench [-t THREADS] [-r REPEATS] [--ctx LIST] [--shape HxKVxD,...] [--seqs LIST] "
    "[--kv f16|q8_0] [--prefill]\n";

struct Shape {
  int64_t n_head, n_head_kv, head_dim;
};

Shape parse_shape(const std::string& s, const tc::bench::ArgReader& args) {
  Shape sh{};
  if (std::sscanf(s.c_str(), "%ldx%ldx%ld", &sh.n_head, &sh.n_head_kv, &sh.head_dim) != 3 || sh.n_head <= 0 ||
      sh.n_head_kv <= 0 || sh.head_dim <= 0 || sh.n_head % sh.n_head_kv != 0) {
    args.usage();
  }
  return sh;
}

std::vector<int64_t> parse_ints(const std::string& s, const tc::bench::ArgReader& args) {
  std::vector<int64_t> out;
  for (const std::string& item : tc::bench::split_list(s)) {
    const int64_t v = std::atoll(item.c_str());
    if (v <= 0) args.usage();
    out.push_back(v);
  }
  if (out.empty()) args.usage();
  return out;
}

// n_rows rows of `row` seeded random values near N(0, 0.25), stored as `type`.
void fill_rows(std::byte* dst, int64_t n_rows, int64_t row, tc::kernels::DType type, uint64_t seed) {
  std::vector<float> tmp(static_cast<size_t>(row));
  const int64_t row_bytes = tc::kernels::row_bytes(type, row);
  for (int64_t i = 0; i < n_rows; ++i) {
    tc::bench::fill_random(tmp.data(), row, seed + static_cast<uint64_t>(i));
    tc::kernels::store_kv(tmp.data(), 1, row, type, dst + i * row_bytes);
  }
}

// Median seconds of one decode step's attention for `n_seqs` sequences at
// context `ctx`, cycling through layers of caches.
double time_step(const Shape& sh, int64_t ctx, int64_t n_seqs, tc::kernels::DType kv_type, int repeats,
                 tc::kernels::ThreadPool& pool) {
  const int64_t row = sh.n_head_kv * sh.head_dim;
  const int64_t cache_bytes = ctx * tc::kernels::row_bytes(kv_type, row);  // per K (or V) cache of one sequence
  const int64_t step_bytes = 2 * cache_bytes * n_seqs;
  const int64_t n_layers = std::max<int64_t>(2, (int64_t{512} << 20) / step_bytes);
  // kv_type [layer][seq][k|v][ctx, n_head_kv * head_dim], one buffer as the engine's KvCache.
  tc::kernels::Buffer caches = tc::kernels::Buffer::host(static_cast<size_t>(n_layers * n_seqs * 2 * cache_bytes));
  auto cache = [&](int64_t i) { return caches.as<std::byte>() + i * cache_bytes; };
  for (int64_t i = 0; i < n_layers * n_seqs * 2; ++i) fill_rows(cache(i), ctx, row, kv_type, static_cast<uint64_t>(i) + 1);
  tc::kernels::AttentionParams params;
  params.k_type = params.v_type = kv_type;
  std::vector<float> q(static_cast<size_t>(n_seqs * sh.n_head * sh.head_dim));
  tc::bench::fill_random(q.data(), static_cast<int64_t>(q.size()), 99);
  std::vector<float> out(q.size());
  const int32_t position = static_cast<int32_t>(ctx - 1);
  std::vector<tc::kernels::AttentionSequence> seqs(static_cast<size_t>(n_seqs));
  auto run_layer = [&](int64_t layer) {
    for (int64_t s = 0; s < n_seqs; ++s) {
      const int64_t base = (layer * n_seqs + s) * 2;
      seqs[static_cast<size_t>(s)] = {q.data() + s * sh.n_head * sh.head_dim,
                                      cache(base),
                                      cache(base + 1),
                                      1,
                                      ctx,
                                      &position,
                                      out.data() + s * sh.n_head * sh.head_dim};
    }
    tc::kernels::attention_batch(seqs, sh.n_head, sh.n_head_kv, sh.head_dim, params, pool);
  };
  for (int64_t l = 0; l < n_layers; ++l) run_layer(l);  // warm-up pass
  std::vector<double> per_step;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    for (int64_t l = 0; l < n_layers; ++l) run_layer(l);
    per_step.push_back(tc::bench::seconds_since(t0) / static_cast<double>(n_layers));
  }
  return tc::bench::median(per_step);
}

// A table's title line: "# WHAT attention, TYPE KV, N threads, median of R".
void print_title(const char* what, tc::kernels::DType kv_type, int threads, int repeats) {
  std::printf("# %s attention, %s KV, %d threads, median of %d\n\n", what,
              std::string(tc::kernels::dtype_name(kv_type)).c_str(), threads, repeats);
}

// Median seconds of one prompt's attention: ctx tokens at positions
// [0, ctx), each over its causal context, as a prefill step of one layer.
double time_prefill(const Shape& sh, int64_t ctx, tc::kernels::DType kv_type, int repeats,
                    tc::kernels::ThreadPool& pool) {
  const int64_t row = sh.n_head_kv * sh.head_dim;
  const int64_t cache_bytes = ctx * tc::kernels::row_bytes(kv_type, row);
  std::vector<std::byte> k(static_cast<size_t>(cache_bytes)), v(static_cast<size_t>(cache_bytes));
  fill_rows(k.data(), ctx, row, kv_type, 1);
  fill_rows(v.data(), ctx, row, kv_type, 2);
  std::vector<float> q(static_cast<size_t>(ctx * sh.n_head * sh.head_dim));
  tc::bench::fill_random(q.data(), static_cast<int64_t>(q.size()), 99);
  std::vector<float> out(q.size());
  std::vector<int32_t> positions(static_cast<size_t>(ctx));
  for (int64_t t = 0; t < ctx; ++t) positions[static_cast<size_t>(t)] = static_cast<int32_t>(t);
  tc::kernels::AttentionParams params;
  params.k_type = params.v_type = kv_type;
  auto run = [&] {
    tc::kernels::attention(q.data(), k.data(), v.data(), ctx, ctx, sh.n_head, sh.n_head_kv, sh.head_dim,
                           positions.data(), out.data(), params, pool);
  };
  run();  // warm-up
  std::vector<double> per_run;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    run();
    per_run.push_back(tc::bench::seconds_since(t0));
  }
  return tc::bench::median(per_run);
}

// Prefill attention rows: ms per prompt and GFLOP/s (2 flops per multiply-add
// of the scores and of the weighted V sums, ctx (ctx + 1) / 2 pairs per head).
void prefill_table(const std::vector<Shape>& shapes, const std::vector<int64_t>& ctxs, tc::kernels::DType kv_type,
                   int threads, int repeats, tc::kernels::ThreadPool& pool) {
  print_title("prefill", kv_type, threads, repeats);
  std::printf("| heads x kv heads x head_dim | prompt tokens | ms per prompt | GFLOP/s |\n");
  std::printf("| --- | ---: | ---: | ---: |\n");
  for (const Shape& sh : shapes) {
    for (const int64_t ctx : ctxs) {
      const double s = time_prefill(sh, ctx, kv_type, repeats, pool);
      const double flops = 4.0 * static_cast<double>(sh.n_head * sh.head_dim) * static_cast<double>(ctx) *
                           static_cast<double>(ctx + 1) / 2.0;
      std::printf("| %ldx%ldx%ld | %ld | %.2f | %.1f |\n", sh.n_head, sh.n_head_kv, sh.head_dim, ctx, s * 1e3,
                  flops * 1e-9 / s);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeats = 7;
  std::vector<int64_t> ctxs{256, 1024, 4096}, n_seqs{1, 8};
  std::vector<Shape> shapes{{32, 32, 128}, {32, 8, 128}, {32, 4, 64}};
  tc::kernels::DType kv_type = tc::kernels::DType::F16;
  bool prefill = false;
  tc::bench::ArgReader args(argc, argv, kUsage);
  while (args.next()) {
    if (args.flag() == "-t") threads = args.int_value();
    else if (args.flag() == "-r") repeats = args.int_value();
    else if (args.flag() == "--ctx") ctxs = parse_ints(args.value(), args);
    else if (args.flag() == "--seqs") n_seqs = parse_ints(args.value(), args);
    else if (args.flag() == "--prefill") prefill = true;
    else if (args.flag() == "--kv") {
      const auto type = tc::kernels::dtype_from_name(args.value());
      if (!type || !tc::kernels::is_kv_dtype(*type)) args.usage();
      kv_type = *type;
    }
    else if (args.flag() == "--shape") {
      shapes.clear();
      for (const std::string& s : tc::bench::split_list(args.value())) shapes.push_back(parse_shape(s, args));
      if (shapes.empty()) args.usage();
    } else args.usage();
  }
  if (threads <= 0 || repeats <= 0) args.usage();
  for (const Shape& sh : shapes) {
    if (kv_type == tc::kernels::DType::Q8_0 && sh.head_dim % 32 != 0) args.usage();  // q8_0 heads are whole blocks
  }
  tc::kernels::ThreadPool pool(threads);
  if (prefill) {
    prefill_table(shapes, ctxs, kv_type, threads, repeats, pool);
    return 0;
  }
  // The probe's pages are written first: untouched, they would all map the
  // kernel's zero page and read from cache.
  tc::kernels::Buffer probe = tc::kernels::Buffer::host(size_t{1} << 30);
  pool.run([&](int t, int nt) {
    const size_t n = probe.size(), b = n * t / nt, e = n * (t + 1) / nt;
    std::memset(probe.as<std::byte>() + b, t + 1, e - b);
  });
  std::vector<double> probes;
  print_title("decode", kv_type, threads, repeats);
  std::printf("| heads x kv heads x head_dim | context | sequences | us per step | KV MB per step | KV GB/s | %% of read probe |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const Shape& sh : shapes) {
    for (const int64_t ctx : ctxs) {
      for (const int64_t n : n_seqs) {
        const double bw = tc::bench::probe_read(probe.as<std::byte>(), static_cast<int64_t>(probe.size()), pool);
        probes.push_back(bw);
        const double s = time_step(sh, ctx, n, kv_type, repeats, pool);
        const double mb =
            2.0 * static_cast<double>(ctx * tc::kernels::row_bytes(kv_type, sh.n_head_kv * sh.head_dim) * n) * 1e-6;
        std::printf("| %ldx%ldx%ld | %ld | %ld | %.1f | %.2f | %.1f | %.0f%% |\n", sh.n_head, sh.n_head_kv, sh.head_dim,
                    ctx, n, s * 1e6, mb, mb * 1e-3 / s, 100.0 * mb * 1e-3 / s / bw);
        std::fflush(stdout);
      }
    }
  }
  std::printf("\nread probe (GB/s, before each row): median %.1f\n", tc::bench::median(probes));
  return 0;
}
