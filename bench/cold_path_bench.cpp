// cold_path_bench: the CPU's cold-neuron FFN of one 13B-shape layer
// (n_embd 5120, n_ff 13824 by default) at ~10% of its neurons active,
// against the machine's streaming read bandwidth, in two layouts:
//   rows     gate and up as gathered GEMVs over the three separate matrices,
//            down as scaled ffn_down_t rows (SparseFfnBlock before bundles);
//   bundles  each neuron's gate, up and ffn_down_t rows contiguous
//            (kernels/cpu/neuron_bundles.h), one pass per slot range;
//   read     the bytes the bundles layout reads, read without computing
//            anything (bench/bundle_read.h): the ceiling memory sets for
//            this gather on this machine.
// Per call: a predicted set P of --predicted % of n_ff (default 20), drawn
// at random; the gates of random inputs are positive for about half of P, so
// about 10% of the neurons are live (computed), as in the generated sparse
// models (P about twice the live set). Bytes counted are the bytes a call
// must read: the gate rows of P, the up and down rows of the live set.
// Weights come from DRAM: calls cycle through copies of the layer adding up
// to at least 512 MiB and draw a fresh set each time. Each round times the
// read probe (bench_timing.h) and both layouts, interleaved; tables give
// medians over rounds. Both layouts' outputs are compared once per dtype.
//   cold_path_bench [-t THREADS] [-r ROUNDS] [--dtype LIST] [--shape EMBDxFF]
//                   [--predicted PCT] [--hot] [--json FILE]
// --hot keeps one copy of the layer (with a small --shape, the kernels'
// compute rate from the caches instead of DRAM's).
// --json adds a run to bench/results/cold-path.json ({"runs": [...]}, one
// per machine, thread count and ISA variant; a rerun replaces its own):
// machine, threads, stream_gbs (median probe), cold_gbs (the bundles'
// GB/s, the slower dtype), read_gbs (the read-only pass of that dtype) and
// a row per dtype and layout. The read-only pass reads each draw's live set as computed on the
// first copy of the layer (the other copies' differ, with the same size).
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_args.h"
#include "bench/bench_timing.h"
#include "bench/bundle_read.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/neuron_bundles.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/sparse_ffn.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/dtype.h"

namespace {

using namespace tc::kernels;
using tc::bench::Clock;
using tc::bench::fill_random;
using tc::bench::median;
using tc::bench::probe_read;
using tc::bench::seconds_since;

constexpr int64_t kMinLayerBytes = 512ll << 20;  // copies of the layer (each layout) add up to this
constexpr int64_t kProbeBytes = 512ll << 20;
constexpr int kDraws = 16;                     // predicted sets drawn per dtype
constexpr double kMinSecondsPerTiming = 0.25;  // calls per timed block: at least this long

struct Options {
  int threads = 2;
  int rounds = 7;
  std::vector<std::string> dtypes = {"f16", "q4_0"};
  int64_t n_embd = 5120;
  int64_t n_ff = 13824;
  double predicted_pct = 20;
  std::string json;
  bool hot = false;  // one copy of the layer, timed from the caches when it fits
};

constexpr const char* kUsage =
    "usage: cold_path_bench [-t THREADS] [-r ROUNDS] [--dtype LIST] [--shape EMBDxFF] [--predicted PCT]\n"
    "                       [--hot] [--json FILE]\n";

Options parse(int argc, char** argv) {
  Options o;
  tc::bench::ArgReader args(argc, argv, kUsage);
  while (args.next()) {
    const std::string& a = args.flag();
    if (a == "-t") {
      o.threads = std::max(1, args.int_value());
    } else if (a == "-r") {
      o.rounds = std::max(1, args.int_value());
    } else if (a == "--dtype") {
      o.dtypes = tc::bench::split_list(args.value());
    } else if (a == "--shape") {
      const std::string s = args.value();
      const auto x = s.find('x');
      if (x == std::string::npos) args.usage();
      o.n_embd = std::atoll(s.substr(0, x).c_str());
      o.n_ff = std::atoll(s.substr(x + 1).c_str());
    } else if (a == "--predicted") {
      o.predicted_pct = std::atof(args.value().c_str());
    } else if (a == "--hot") {
      o.hot = true;
    } else if (a == "--json") {
      o.json = args.value();
    } else {
      args.usage();
    }
  }
  if (o.predicted_pct <= 0 || o.predicted_pct > 100) args.usage();
  return o;
}

// 2 MiB-aligned bytes advised into huge pages (as kernels::Buffer does for
// repacked weights and as the model file's mapping gets).
struct Bytes {
  static constexpr size_t kAlign = size_t{2} << 20;
  explicit Bytes(int64_t n) : size((static_cast<size_t>(n) + kAlign - 1) / kAlign * kAlign) {
    data = static_cast<std::byte*>(std::aligned_alloc(kAlign, size));
    if (data == nullptr) throw std::bad_alloc();
    ::madvise(data, size, MADV_HUGEPAGE);
  }
  ~Bytes() { std::free(data); }
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;
  size_t size;
  std::byte* data;
};

// One copy of the layer in both layouts.
struct Layer {
  Tensor gate, up, down_t;  // dtype {n_embd, n_ff}, row i = neuron i
  BundleSet bundles;        // n_ff bundles, bundle i = neuron i
};

Tensor make_matrix(std::byte* base, DType dtype, int64_t n_cols, int64_t n_rows, uint64_t seed, ThreadPool& pool) {
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

// A predicted set (ascending) and its input.
struct Draw {
  std::vector<int32_t> predicted;
  std::vector<int32_t> live;  // the live set on the first copy (ascending)
  std::vector<float> x;  // f32 [n_embd]
};

std::vector<Draw> make_draws(int64_t n_ff, int64_t n_embd, double pct, uint64_t seed) {
  std::vector<Draw> draws;
  std::mt19937_64 rng(seed);
  const auto count = static_cast<int64_t>(std::llround(static_cast<double>(n_ff) * pct / 100.0));
  std::vector<int32_t> perm(static_cast<size_t>(n_ff));
  for (int d = 0; d < kDraws; ++d) {
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = 0; i < count; ++i) {
      std::swap(perm[static_cast<size_t>(i)],
                perm[static_cast<size_t>(i + static_cast<int64_t>(rng() % static_cast<uint64_t>(n_ff - i)))]);
    }
    Draw dr;
    dr.predicted.assign(perm.begin(), perm.begin() + count);
    std::sort(dr.predicted.begin(), dr.predicted.end());
    dr.x.resize(static_cast<size_t>(n_embd));
    fill_random(dr.x.data(), n_embd, 777 + static_cast<uint64_t>(d));
    draws.push_back(std::move(dr));
  }
  return draws;
}

// Today's rows path (as SparseFfnBlock::run before bundles), one token.
struct RowsScratch {
  std::vector<float> gate, up;
  std::vector<int32_t> live;
};

int64_t run_rows(const Layer& L, const Draw& d, float* y, RowsScratch& s, ThreadPool& pool) {
  const auto n_pred = static_cast<int64_t>(d.predicted.size());
  s.gate.resize(d.predicted.size());
  s.up.resize(d.predicted.size());
  s.live.resize(d.predicted.size());
  matmul_rows(L.gate, d.x.data(), 1, d.predicted.data(), n_pred, s.gate.data(), pool);
  int64_t n_live = 0;
  for (int64_t k = 0; k < n_pred; ++k) {
    s.live[static_cast<size_t>(n_live)] = d.predicted[static_cast<size_t>(k)];
    s.gate[static_cast<size_t>(n_live)] = s.gate[static_cast<size_t>(k)];
    n_live += s.gate[static_cast<size_t>(k)] > 0.0f;
  }
  matmul_rows(L.up, d.x.data(), 1, s.live.data(), n_live, s.up.data(), pool);
  ffn_activation(Activation::ReGLU, s.gate.data(), s.up.data(), n_live, s.up.data());
  axpy_rows(L.down_t, s.up.data(), 1, s.live.data(), n_live, y, pool);
  return n_live;
}

struct Timing {
  std::vector<double> gbs, ms, share;
};

struct Row {
  std::string dtype;
  Timing rows, bundles, read;
  double predicted_pct = 0, live_pct = 0, max_rel_diff = 0;
};

std::string machine_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU", family, model_no;
  while (std::getline(in, line)) {
    auto value = [&] { return line.substr(line.find(':') + 2); };
    if (line.rfind("model name", 0) == 0 && model == "unknown CPU") model = value();
    if (line.rfind("cpu family", 0) == 0 && family.empty()) family = value();
    if (line.rfind("model\t", 0) == 0 && model_no.empty()) model_no = value();
  }
  return model + " (family " + family + ", model " + model_no + "), " + std::to_string(ThreadPool::physical_cores()) +
         " cores";
}

// Adds `run` to the JSON file at path ({"runs": [...]}, one run per
// machine, thread count and ISA variant: a new run replaces that one's
// last), keeping the other machines' runs. A file that is not such an
// object is left alone (false, with a message).
bool save_run(const std::string& path, const nlohmann::json& run) {
  nlohmann::json doc = {{"runs", nlohmann::json::array()}};
  if (std::ifstream in(path); in) {
    try {
      doc = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
      std::fprintf(stderr, "cold_path_bench: %s is not JSON (%s); not overwritten\n", path.c_str(), e.what());
      return false;
    }
    if (!doc.is_object() || !doc.contains("runs") || !doc["runs"].is_array()) {
      std::fprintf(stderr, "cold_path_bench: %s has no \"runs\" array; not overwritten\n", path.c_str());
      return false;
    }
  }
  auto& runs = doc["runs"];
  auto same = [&](const nlohmann::json& r) {
    return r.value("machine", "") == run["machine"] && r.value("threads", 0) == run["threads"] &&
           r.value("isa", "") == run["isa"];
  };
  auto it = std::find_if(runs.begin(), runs.end(), same);
  if (it != runs.end()) {
    *it = run;
  } else {
    runs.push_back(run);
  }
  std::ofstream out(path);
  out << doc.dump(2) << "\n";
  if (!out) {
    std::fprintf(stderr, "cold_path_bench: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  ThreadPool pool(o.threads);
  std::printf("cold_path_bench: n_embd %lld, n_ff %lld, %d threads, %d rounds, predicted %.0f%% of n_ff\n",
              static_cast<long long>(o.n_embd), static_cast<long long>(o.n_ff), o.threads, o.rounds, o.predicted_pct);
  Bytes probe_bytes(kProbeBytes);
  std::memset(probe_bytes.data, 1, probe_bytes.size);
  std::vector<double> probes;
  std::vector<Row> rows;

  for (const std::string& name : o.dtypes) {
    const auto parsed = dtype_from_name(name);
    if (!parsed) {
      std::fprintf(stderr, "cold_path_bench: unknown dtype %s\n", name.c_str());
      return 2;
    }
    const DType dtype = *parsed;
    const BundleLayout bl = bundle_layout(dtype, o.n_embd);
    const int64_t layer_bytes = bl.row_bytes * 3 * o.n_ff;
    const int n_copies =
        o.hot ? 1 : static_cast<int>(std::max<int64_t>(1, (kMinLayerBytes + layer_bytes - 1) / layer_bytes));
    std::fprintf(stderr, "cold_path_bench: %s: %d copies of %.0f MB per layout\n", name.c_str(), n_copies,
                 static_cast<double>(layer_bytes) * 1e-6);
    std::vector<std::unique_ptr<Bytes>> mem;
    std::vector<Layer> layers;
    std::vector<int32_t> identity(static_cast<size_t>(o.n_ff));
    std::iota(identity.begin(), identity.end(), 0);
    for (int c = 0; c < n_copies; ++c) {
      auto rows_mem = std::make_unique<Bytes>(layer_bytes);
      auto bundle_mem = std::make_unique<Bytes>(bundle_gate_bytes(bl, o.n_ff) + 64 + bundle_up_down_bytes(bl, o.n_ff));
      Layer L;
      const uint64_t seed = 100 + static_cast<uint64_t>(c) * 3;
      L.gate = make_matrix(rows_mem->data, dtype, o.n_embd, o.n_ff, seed, pool);
      L.up = make_matrix(rows_mem->data + bl.row_bytes * o.n_ff, dtype, o.n_embd, o.n_ff, seed + 1, pool);
      L.down_t = make_matrix(rows_mem->data + 2 * bl.row_bytes * o.n_ff, dtype, o.n_embd, o.n_ff, seed + 2, pool);
      std::byte* up_down = bundle_mem->data + (bundle_gate_bytes(bl, o.n_ff) + 63) / 64 * 64;
      pack_bundles(L.gate, L.up, L.down_t, identity, bl, bundle_mem->data, up_down, pool);
      L.bundles = BundleSet{bl, bundle_mem->data, up_down, o.n_ff};
      layers.push_back(L);
      mem.push_back(std::move(rows_mem));
      mem.push_back(std::move(bundle_mem));
    }
    auto draws = make_draws(o.n_ff, o.n_embd, o.predicted_pct, 42);
    std::vector<float> y_rows(static_cast<size_t>(o.n_embd)), y_bundles(static_cast<size_t>(o.n_embd));
    RowsScratch rs;
    BundleFfnScratch bs;

    Row row;
    row.dtype = name;
    // The two layouts compute the same function (up to the order of the
    // down sums): compared on every draw of the first copy.
    int64_t live_sum = 0, pred_sum = 0;
    for (Draw& d : draws) {
      const int64_t a = run_rows(layers[0], d, y_rows.data(), rs, pool);
      d.live.assign(rs.live.begin(), rs.live.begin() + a);
      const int64_t b = bundle_ffn(layers[0].bundles, d.x.data(), 1, d.predicted.data(),
                                   static_cast<int64_t>(d.predicted.size()), nullptr, Activation::ReGLU,
                                   y_bundles.data(), bs, pool);
      if (a != b) {
        std::fprintf(stderr, "cold_path_bench: live sets differ (%lld rows, %lld bundles)\n",
                     static_cast<long long>(a), static_cast<long long>(b));
        return 1;
      }
      double num = 0, den = 0;
      for (int64_t j = 0; j < o.n_embd; ++j) {
        num = std::max(num, std::fabs(static_cast<double>(y_rows[static_cast<size_t>(j)]) - y_bundles[static_cast<size_t>(j)]));
        den = std::max(den, std::fabs(static_cast<double>(y_rows[static_cast<size_t>(j)])));
      }
      row.max_rel_diff = std::max(row.max_rel_diff, num / std::max(den, 1e-30));
      live_sum += a;
      pred_sum += static_cast<int64_t>(d.predicted.size());
    }
    if (row.max_rel_diff > 1e-4) {
      std::fprintf(stderr, "cold_path_bench: the layouts disagree (max |diff| / max |y| = %.3g)\n", row.max_rel_diff);
      return 1;
    }
    row.predicted_pct = 100.0 * static_cast<double>(pred_sum) / static_cast<double>(kDraws * o.n_ff);
    row.live_pct = 100.0 * static_cast<double>(live_sum) / static_cast<double>(kDraws * o.n_ff);

    int copy = 0, draw = 0;
    enum class Layout { Rows, Bundles, Read };
    auto time_layout = [&](Layout layout, Timing& t, double probe) {
      int64_t bytes = 0;
      int calls = 0;
      const auto t0 = Clock::now();
      while (calls < 3 || seconds_since(t0) < kMinSecondsPerTiming) {
        copy = (copy + 1) % n_copies;
        draw = (draw + 1) % kDraws;
        const Layer& L = layers[static_cast<size_t>(copy)];
        const Draw& d = draws[static_cast<size_t>(draw)];
        if (layout == Layout::Read) {
          bytes += tc::bench::read_bundles(L.bundles, d.predicted, d.live, pool);
        } else {
          const int64_t n_live =
              layout == Layout::Bundles
                  ? bundle_ffn(L.bundles, d.x.data(), 1, d.predicted.data(), static_cast<int64_t>(d.predicted.size()),
                               nullptr, Activation::ReGLU, y_bundles.data(), bs, pool)
                  : run_rows(L, d, y_rows.data(), rs, pool);
          bytes += bl.row_bytes * (static_cast<int64_t>(d.predicted.size()) + 2 * n_live);
        }
        ++calls;
      }
      const double sec = seconds_since(t0);
      t.ms.push_back(sec / calls * 1e3);
      t.gbs.push_back(static_cast<double>(bytes) / sec * 1e-9);
      t.share.push_back(t.gbs.back() / probe);
    };
    for (int r = -1; r < o.rounds; ++r) {  // r = -1: warm-up, not recorded
      const double probe = probe_read(probe_bytes.data, kProbeBytes, pool);
      Timing scratch_timing;
      // The three layouts in a rotating order, so none always runs first.
      const Layout order[3] = {Layout::Rows, Layout::Bundles, Layout::Read};
      for (int i = 0; i < 3; ++i) {
        const Layout layout = order[(i + std::max(r, 0)) % 3];
        Timing& t = layout == Layout::Rows ? row.rows : layout == Layout::Bundles ? row.bundles : row.read;
        time_layout(layout, r >= 0 ? t : scratch_timing, probe);
      }
      if (r >= 0) probes.push_back(probe);
    }
    rows.push_back(std::move(row));
  }

  const double stream = median(probes);
  std::printf("\n| dtype | predicted | live | layout | ms per call | GB/s | %% of read probe |\n");
  std::printf("| --- | ---: | ---: | --- | ---: | ---: | ---: |\n");
  const char* const kLayoutNames[3] = {"rows", "bundles", "read"};
  auto timing = [](const Row& r, int b) -> const Timing& { return b == 0 ? r.rows : b == 1 ? r.bundles : r.read; };
  double cold = 0, read = 0;
  bool first = true;
  for (const Row& r : rows) {
    for (int b = 0; b < 3; ++b) {
      const Timing& t = timing(r, b);
      std::printf("| %s | %.1f%% | %.1f%% | %s | %.3f | %.1f | %.0f%% |\n", r.dtype.c_str(), r.predicted_pct,
                  r.live_pct, kLayoutNames[b], median(t.ms), median(t.gbs), 100.0 * median(t.share));
    }
    if (first || median(r.bundles.gbs) < cold) {
      cold = median(r.bundles.gbs);
      read = median(r.read.gbs);
    }
    first = false;
  }
  std::printf("\nread probe (median over rounds): %.1f GB/s; %% columns: median of each round's GB/s over that "
              "round's probe\n",
              stream);

  if (!o.json.empty()) {
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%MZ", std::gmtime(&now));
    nlohmann::json run = {{"machine", machine_name()},
                          {"date", date},
                          {"isa", matmul_isa()},
                          {"threads", o.threads},
                          {"shape", {{"n_embd", o.n_embd}, {"n_ff", o.n_ff}}},
                          {"stream_gbs", stream},
                          {"cold_gbs", cold},
                          {"read_gbs", read},
                          {"rows", nlohmann::json::array()}};
    for (const Row& r : rows) {
      for (int b = 0; b < 3; ++b) {
        const Timing& t = timing(r, b);
        run["rows"].push_back({{"dtype", r.dtype},
                               {"layout", kLayoutNames[b]},
                               {"predicted_pct", r.predicted_pct},
                               {"live_pct", r.live_pct},
                               {"ms", median(t.ms)},
                               {"gbs", median(t.gbs)},
                               {"probe_fraction", median(t.share)}});
      }
    }
    if (!save_run(o.json, run)) return 1;
    std::printf("wrote %s\n", o.json.c_str());
  }
  return 0;
}
