// `thermocline make-mmproj -o FILE --n-embd-text N [shape] [--type T] [--seed S]`:
// a random gemma3 vision projector for a model of width N (profiler/make_mmproj.h).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/runners.h"
#include "kernels/dtype.h"
#include "profiler/make_mmproj.h"

namespace tc::cli {

void register_make_mmproj(CLI::App& app) {
  auto* sub = app.add_subcommand("make-mmproj",
                                 "Write a vision projector (mmproj GGUF, gemma3) with random weights for a model");
  auto o = std::make_shared<profiler::MakeMmprojOptions>();
  auto output = std::make_shared<std::string>();
  auto type = std::make_shared<std::string>("f16");
  sub->add_option("-o,--output", *output, "Output GGUF file")->required();
  sub->add_option("--n-embd-text", o->n_embd_text, "The language model's embedding width (its n_embd)")
      ->required()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("--image-size", o->image_size, "Side of the square images are fitted into (default 896)")
      ->check(CLI::Range(int64_t{1}, int64_t{8192}));
  sub->add_option("--patch-size", o->patch_size, "Patch side (default 14)")->check(CLI::Range(int64_t{1}, int64_t{64}));
  sub->add_option("--n-embd", o->n_embd, "Encoder width (default 1152)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 14));
  sub->add_option("--n-ff", o->n_ff, "Encoder FFN width (default 4304)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("--n-layer", o->n_layer, "Encoder layers (default 27)")->check(CLI::Range(int64_t{1}, int64_t{256}));
  sub->add_option("--n-head", o->n_head, "Encoder heads (default 16)")->check(CLI::Range(int64_t{1}, int64_t{256}));
  sub->add_option("--pool", o->n_merge, "Average-pool side (default 4)")->check(CLI::Range(int64_t{1}, int64_t{64}));
  sub->add_option("--type", *type, "Type of the layers' matrices: f32, f16, bf16 or q8_0 (default f16)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}));
  sub->add_option("--seed", o->seed, "RNG seed (same seed and options: same bytes)");
  runners()["make-mmproj"] = [o, output, type] {
    o->type = kernels::dtype_from_name(*type).value();
    const auto start = std::chrono::steady_clock::now();
    profiler::make_mmproj(*output, *o);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "wrote %s in %.1f s\n", output->c_str(), secs);
    return 0;
  };
}

}  // namespace tc::cli
