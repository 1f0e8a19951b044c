// teal_quality: the quality of TEAL activation sparsity (engine/sparse/teal.h)
// at several target sparsities against the dense model: perplexity (as
// `thermocline perplexity`: runtime::perplexity), KL divergence from the dense
// next-token distribution, top-1 agreement, and the sparsity each
// linear-input site reached. Calibrates on one text, scores another.
//   teal_quality -m MODEL --calib TEXT -f TEXT [options]
//   teal_quality --random-swiglu [options]   a make-model SwiGLU model on random tokens
// Options: --targets 0,0.25,0.4,0.5  --ctx N (default min(256, n_ctx_train))
//          --calib-tokens N (default 32768)  --chunks N (0: all)  -t THREADS
//          --kl-chunks N (chunks for the KL divergence and top-1 agreement; default 16)
//          --out DIR (where --random-swiglu writes its model; default /tmp/teal_quality)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/perplexity.h"
#include "engine/sparse/teal.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "profiler/teal_calibration.h"

namespace {

using tc::text::TokenId;

struct Options {
  std::string model, calib, text;
  bool random_swiglu = false;
  std::filesystem::path out = "/tmp/teal_quality";
  std::vector<float> targets = {0.0f, 0.25f, 0.4f, 0.5f};
  int64_t n_ctx = 0;
  int64_t calib_tokens = 32768;
  int64_t n_chunks = 0;
  int64_t kl_chunks = 16;
  int threads = 0;
};

constexpr const char* kUsage =
    "usage: teal_quality (-m MODEL --calib TEXT -f TEXT | --random-swiglu) [--targets LIST] [--ctx N]\n"
    "                    [--calib-tokens N] [--chunks N] [--kl-chunks N] [-t THREADS] [--out DIR]\n";

Options parse(int argc, char** argv) {
  Options o;
  tc::bench::ArgReader args(argc, argv, kUsage);
  while (args.next()) {
    const std::string& a = args.flag();
    if (a == "-m") {
      o.model = args.value();
    } else if (a == "--calib") {
      o.calib = args.value();
    } else if (a == "-f") {
      o.text = args.value();
    } else if (a == "--random-swiglu") {
      o.random_swiglu = true;
    } else if (a == "--out") {
      o.out = args.value();
    } else if (a == "--targets") {
      o.targets.clear();
      for (const auto& s : tc::bench::split_list(args.value())) o.targets.push_back(std::strtof(s.c_str(), nullptr));
    } else if (a == "--ctx") {
      o.n_ctx = args.int64_value();
    } else if (a == "--calib-tokens") {
      o.calib_tokens = args.int64_value();
    } else if (a == "--kl-chunks") {
      o.kl_chunks = std::max<int64_t>(1, args.int64_value());
    } else if (a == "--chunks") {
      o.n_chunks = args.int64_value();
    } else if (a == "-t") {
      o.threads = args.int_value();
    } else {
      args.usage();
    }
  }
  if (!o.random_swiglu && (o.model.empty() || o.calib.empty() || o.text.empty())) args.usage();
  return o;
}

std::vector<TokenId> random_tokens(const tc::model::LoadedModel& m, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<TokenId> out{m.tokenizer->vocab().bos_id};
  while (out.size() < n) out.push_back(static_cast<TokenId>(rng() % static_cast<uint64_t>(m.spec.n_vocab)));
  return out;
}

// Over the scored half of the first `n_chunks` chunks (as perplexity()
// scores them): the mean KL divergence of the TEAL next-token distribution
// from the dense one, in nats, and how often their top tokens agree.
struct Divergence {
  double kl = 0;
  double top1_agree = 0;
};

Divergence divergence(tc::model::LlamaModel& llama, tc::runtime::KvCache& kv, std::span<const TokenId> tokens,
                      TokenId bos, int64_t n_ctx, int64_t n_chunks, tc::model::InputSparsifier& sparsifier) {
  const int64_t n_vocab = llama.spec().n_vocab;
  n_chunks = std::min<int64_t>(n_chunks, static_cast<int64_t>(tokens.size()) / n_ctx);
  auto logits_of = [&](const std::vector<TokenId>& chunk, tc::model::InputSparsifier* s) {
    std::vector<float> logits;  // f32 [n_ctx, n_vocab]
    llama.set_input_sparsifier(s);
    kv.clear(0);
    const tc::model::StepSequence step{0, chunk, true};
    if (llama.forward({&step, 1}, kv, logits) != tc::model::StepStatus::Ok) std::abort();
    kv.clear(0);
    return logits;
  };
  Divergence d;
  int64_t n = 0;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const auto chunk = tc::runtime::chunk_tokens(tokens, c * n_ctx, n_ctx, bos);
    const auto p = logits_of(chunk, nullptr);
    const auto q = logits_of(chunk, &sparsifier);
    for (int64_t j = n_ctx / 2; j < n_ctx - 1; ++j, ++n) {
      const float* lp = p.data() + j * n_vocab;
      const float* lq = q.data() + j * n_vocab;
      const int64_t top_p = std::max_element(lp, lp + n_vocab) - lp;
      const int64_t top_q = std::max_element(lq, lq + n_vocab) - lq;
      d.top1_agree += top_p == top_q;
      // KL(p || q) = sum p (log p - log q), with log p = l - lse(l).
      double mp = lp[top_p], mq = lq[top_q], sp = 0, sq = 0;
      for (int64_t v = 0; v < n_vocab; ++v) {
        sp += std::exp(lp[v] - mp);
        sq += std::exp(lq[v] - mq);
      }
      const double lse_p = mp + std::log(sp), lse_q = mq + std::log(sq);
      double kl = 0;
      for (int64_t v = 0; v < n_vocab; ++v) {
        const double log_p = lp[v] - lse_p;
        kl += std::exp(log_p) * (log_p - (lq[v] - lse_q));
      }
      d.kl += kl;
    }
  }
  llama.set_input_sparsifier(nullptr);
  d.kl /= static_cast<double>(n);
  d.top1_agree /= static_cast<double>(n);
  return d;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (o.random_swiglu) {
    tc::profiler::MakeModelOptions mo;  // make-model's defaults: n_embd 256, 4 layers, n_ff 688, f16
    std::filesystem::create_directories(o.out);
    mo.output = o.out / "swiglu.gguf";
    mo.seed = 7;
    mo.ffn_form = tc::model::FfnForm::SwiGLU;
    mo.n_threads = o.threads;
    tc::profiler::make_model(mo);
    o.model = mo.output.string();
  }
  const auto m = tc::model::load_model(o.model);
  const auto& vocab = m->tokenizer->vocab();
  const TokenId bos = vocab.add_bos ? vocab.bos_id : -1;
  const int64_t n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min<int64_t>(256, m->spec.n_ctx_train);
  std::vector<TokenId> calib, text;
  if (o.random_swiglu) {
    calib = random_tokens(*m, static_cast<size_t>(o.calib_tokens), 1);
    text = random_tokens(*m, 16384, 2);
  } else {
    // A prefix is enough: about 4 bytes a token, twice over for safety.
    std::string c = tc::bench::read_file("teal_quality", o.calib);
    c.resize(std::min(c.size(), static_cast<size_t>(o.calib_tokens) * 8));
    calib = m->tokenizer->encode(c);
    text = m->tokenizer->encode(tc::bench::read_file("teal_quality", o.text));
  }
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = o.threads});
  std::printf("model %s (%s, n_layer %lld) | calibration %s: %lld tokens | scored %s: %zu tokens, ctx %lld\n",
              o.model.c_str(), std::string(tc::model::ffn_form_name(m->spec.ffn_form)).c_str(),
              static_cast<long long>(m->spec.n_layer), o.random_swiglu ? "random tokens" : o.calib.c_str(),
              static_cast<long long>(std::min<int64_t>(o.calib_tokens, static_cast<int64_t>(calib.size()))),
              o.random_swiglu ? "random tokens" : o.text.c_str(), text.size(), static_cast<long long>(n_ctx));

  auto start = std::chrono::steady_clock::now();
  tc::profiler::TealCalibrationOptions co;
  co.n_ctx = n_ctx;
  co.max_tokens = o.calib_tokens;
  const auto calibration = tc::profiler::calibrate_teal(*m, *backend, calib, bos, co);
  std::printf("calibrated on %llu tokens in %.1f s\n\n", static_cast<unsigned long long>(calibration.n_tokens),
              seconds_since(start));

  std::printf("| TEAL target | perplexity | vs dense | KL from dense (nats) | top-1 agrees | sparsity: attn_qkv | "
              "attn_output | ffn_gate_up | ffn_down | all |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  tc::model::LlamaModel llama(*m, *backend);
  tc::runtime::KvCache kv(*backend, m->spec, 1, n_ctx);
  double dense_ppl = 0;
  for (const float target : o.targets) {
    tc::sparse::TealSparsifier sparsifier(tc::sparse::thresholds_for(calibration, target));
    llama.set_input_sparsifier(&sparsifier);
    start = std::chrono::steady_clock::now();
    const auto r = tc::runtime::perplexity(llama, kv, text, bos, {n_ctx, 512, o.n_chunks});
    const double secs = seconds_since(start);
    if (target == 0.0f) dense_ppl = r.ppl;
    char change[32] = "-";
    if (dense_ppl > 0) std::snprintf(change, sizeof change, "%+.2f%%", (r.ppl / dense_ppl - 1) * 100);
    std::vector<double> reached;  // per site, then all; read before divergence() counts more
    for (int s = 0; s < tc::model::kLinearInputCount; ++s) {
      reached.push_back(sparsifier.site_counts(static_cast<tc::model::LinearInput>(s)).fraction());
    }
    reached.push_back(sparsifier.all_counts().fraction());
    const Divergence d = divergence(llama, kv, text, bos, n_ctx, o.kl_chunks, sparsifier);
    std::printf("| %.2f | %.4f +/- %.4f | %s | %.5f | %.1f%% |", static_cast<double>(target), r.ppl, r.ppl_error,
                change, d.kl, d.top1_agree * 100);
    for (const double f : reached) std::printf(" %.3f |", f);
    std::printf("  (%.1f s)\n", secs);
    std::fflush(stdout);
  }
  llama.set_input_sparsifier(nullptr);
  return 0;
}
