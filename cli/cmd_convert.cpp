// `thermocline convert --to-pwri IN.gguf --stats STATS -o OUT
// [--predictor-type f16|q8_0|q4_0|q5_0] [--threshold X] [-t N]`: a ReLU
// model plus trained predictors into a PowerInfer (PWRI) file (docs/pwri.md).
// `thermocline convert --to-f32 IN -o OUT [-t N]`: every quantized tensor
// dequantized to F32 (profiler/convert_f32.h).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/runners.h"
#include "profiler/convert_f32.h"
#include "profiler/convert_pwri.h"

namespace tc::cli {

namespace {

int run_to_f32(profiler::ConvertF32Options o, const std::filesystem::path& output, int n_threads) {
  o.output = output;
  o.n_threads = n_threads;
  const auto start = std::chrono::steady_clock::now();
  ProgressBar bar("writing " + o.output.filename().string());
  const auto r = profiler::convert_to_f32(o, [&bar](uint64_t done, uint64_t total) { bar.update(done, total); });
  bar.finish();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "wrote %s in %.1f s: %lld tensors, %lld of them dequantized to f32, %.1f MiB\n",
               o.output.string().c_str(), secs, static_cast<long long>(r.n_tensors),
               static_cast<long long>(r.n_dequantized), static_cast<double>(r.file_bytes) / (1024.0 * 1024.0));
  return 0;
}

}  // namespace

void register_convert(CLI::App& app) {
  auto o = std::make_shared<profiler::ConvertPwriOptions>();
  auto threshold = std::make_shared<float>(0.0f);
  auto f32 = std::make_shared<profiler::ConvertF32Options>();
  auto* sub = app.add_subcommand(
      "convert", "Convert a model file to another layout: PowerInfer's PWRI, or every quantized tensor as F32");
  auto* to_pwri = sub->add_option(
      "--to-pwri", o->input, "llama.cpp GGUF of a ReLU model (thermocline.ffn_form reglu or drelu) to convert to PWRI");
  auto* to_f32 = sub->add_option("--to-f32", f32->input,
                                 "GGUF or PWRI file to copy with every quantized tensor dequantized to F32 (the same "
                                 "weights, for the float kernels)");
  to_pwri->excludes(to_f32);
  auto* stats = sub->add_option(
      "--stats", o->stats, "Stats file of this model with trained predictors (thermocline profile --train-predictors)");
  sub->add_option("-o,--output", o->output, "Output file")->required();
  auto* predictor_type =
      sub->add_option("--predictor-type", o->predictor_type, "Type of fc1/fc2 (default: as stored in --stats)")
          ->check(CLI::IsMember({"f16", "q8_0", "q4_0", "q5_0"}));
  auto* threshold_opt = sub->add_option(
      "--threshold", *threshold,
      "powerinfer.sparse_threshold (default: the stats' own); replaces the per-layer thresholds");
  for (auto* opt : {stats, predictor_type, threshold_opt}) opt->needs(to_pwri);
  sub->add_option("-t,--threads", o->n_threads,
                  "Threads for the ffn_down transposition or the dequantization (default: all cores)");

  runners()["convert"] = [o, f32, threshold, threshold_opt, stats, to_f32, to_pwri] {
    if (to_f32->count() > 0) return run_to_f32(*f32, o->output, o->n_threads);
    if (to_pwri->count() == 0) {
      std::fprintf(stderr, "error: convert needs --to-pwri FILE or --to-f32 FILE\n");
      return 2;
    }
    if (stats->count() == 0) {
      std::fprintf(stderr, "error: convert --to-pwri needs --stats\n");
      return 2;
    }
    if (threshold_opt->count() > 0) o->threshold = *threshold;
    const auto start = std::chrono::steady_clock::now();
    ProgressBar bar("writing " + o->output.filename().string());
    const auto r = profiler::convert_to_pwri(*o, [&bar](uint64_t done, uint64_t total) { bar.update(done, total); });
    bar.finish();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr,
                 "wrote %s in %.1f s: architecture %s, %lld tensors, %.1f MiB, ffn_down_t %s, sparse threshold %g%s\n",
                 o->output.string().c_str(), secs, r.architecture.c_str(), static_cast<long long>(r.n_tensors),
                 static_cast<double>(r.file_bytes) / (1024.0 * 1024.0),
                 std::string(kernels::dtype_name(r.down_dtype)).c_str(), static_cast<double>(r.threshold),
                 r.layer_thresholds ? " (per-layer thresholds kept)" : "");
    for (const auto& note : r.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
    return 0;
  };
}

}  // namespace tc::cli
