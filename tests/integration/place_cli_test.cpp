// `thermocline place` through the real binary: make-model --sparse, profile,
// then place with budgets worked out from the plan's own fixed cost (all
// neurons, exactly k, k - 1 with one byte less), the default output path,
// and the errors: no budget without a GPU, a garbage budget, a budget below
// the fixed cost, statistics of another model.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/sparse/gpu_index.h"
#include "kernels/device_info.h"
#include "tests/test_util.h"

using tc::test::run_command;

namespace {

std::string bin() { return tc::test::thermocline_binary().string(); }

int64_t n_hot(const tc::sparse::GpuIndex& g) {
  int64_t n = 0;
  for (const auto& layer : g.hot) n += static_cast<int64_t>(layer.size());
  return n;
}

}  // namespace

TEST_CASE("placement: place spends a VRAM budget on a profiled model and writes the gpuidx plan",
          "[integration][placement]") {
  const auto dir = tc::test::scratch_dir("cli_place");
  const std::string model = (dir / "m.gguf").string();
  const std::string other = (dir / "other.gguf").string();
  const std::string stats = (dir / "m.stats").string();
  const std::string corpus = (tc::test::source_dir() / "README.md").string();
  const std::string dims = " --n-embd 64 --n-layer 2 --n-ff 256 --n-head 4 --n-head-kv 2 --n-vocab 512 --type f16"
                           " --predictor-rank 32 -t 2";
  auto made = run_command(bin() + " make-model --sparse -o " + model + dims + " --seed 4");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  auto made_other = run_command(bin() + " make-model --sparse -o " + other + dims + " --seed 5");
  REQUIRE(made_other.exit_code == 0);
  auto prof = run_command(bin() + " profile -m " + model + " --corpus " + corpus + " -o " + stats +
                          " --ctx 64 -n 512 -t 2");
  INFO(prof.output);
  REQUIRE(prof.exit_code == 0);

  const std::string base = bin() + " place -m " + model + " --stats " + stats + " --ctx 128 --parallel 2 --batch 32";
  const std::string plan = (dir / "plan.gpuidx").string();
  // A budget larger than the model: every neuron is hot.
  auto all = run_command(base + " --vram-budget 1GiB -o " + plan);
  INFO(all.output);
  REQUIRE(all.exit_code == 0);
  CHECK_THAT(all.output, Catch::Contains("| layer | hot neurons | hot bytes | bytes/neuron | gate/up/down_t |") &&
                             Catch::Contains("| 0 | 256 / 256 | 98304 | 384 | f16/f16/f16 | 100.0% |") &&
                             Catch::Contains("| KV cache | 65536 |") && Catch::Contains("--vram-budget 1GiB") &&
                             Catch::Contains("wrote " + plan));
  const auto whole = tc::sparse::read_gpu_index(plan, 2, 256);
  CHECK(n_hot(whole) == 512);
  uint64_t fixed = 0, reserve = 0;
  {
    const auto notes = tc::gguf::GgufFile::open(plan);  // closed before the plan is written again
    fixed = notes.get_u64("thermocline.placement.fixed_bytes");
    reserve = notes.get_u64("thermocline.placement.cache_reserve");
  }
  // --prefetch auto (the default, as serve's): the caches' largest size, 16
  // neurons of 384 bytes in layer 1, is kept free.
  const uint64_t caches = 16 * 384;
  CHECK(reserve == caches);
  CHECK(whole.vram_capacity == (uint64_t{1} << 30) - fixed - caches);
  CHECK_THAT(all.output, Catch::Contains("| prefetch caches | 6144 |"));
  auto with_caches = run_command(base + " --vram-budget " + std::to_string(fixed + caches + 37 * 384) + " -o " + plan);
  REQUIRE(with_caches.exit_code == 0);
  CHECK(n_hot(tc::sparse::read_gpu_index(plan, 2, 256)) == 37);
  // Less than both: the caches shrink to half of what the fixed part
  // leaves, (6143 / 2) / 384 = 7 slots; the other half holds 8 hot neurons.
  auto tight = run_command(base + " --vram-budget " + std::to_string(fixed + caches - 1) + " -o " + plan);
  INFO(tight.output);
  REQUIRE(tight.exit_code == 0);
  CHECK_THAT(tight.output, Catch::Contains("| prefetch caches | 2688 |"));
  CHECK(n_hot(tc::sparse::read_gpu_index(plan, 2, 256)) == 8);
  // Under one slot in half of it: refused.
  auto no_room = run_command(base + " --vram-budget " + std::to_string(fixed + 2 * 384 - 1) + " -o " + plan);
  CHECK(no_room.exit_code != 0);
  CHECK_THAT(no_room.output, Catch::Contains("prefetch") && Catch::Contains("--prefetch off"));

  // Without caches (--prefetch off): exactly 37 neurons of 384 bytes, then one byte less: 36.
  const std::string off = " --prefetch off";
  auto exact = run_command(base + off + " --vram-budget " + std::to_string(fixed + 37 * 384) + " -o " + plan);
  INFO(exact.output);
  REQUIRE(exact.exit_code == 0);
  const auto k = tc::sparse::read_gpu_index(plan, 2, 256);
  CHECK(n_hot(k) == 37);
  CHECK(k.vram_capacity == 37 * 384);
  CHECK_THAT(exact.output, Catch::Contains("| unused | 0 |") && Catch::Contains("hot neurons 37 / 512"));
  CHECK_THAT(exact.output, !Catch::Contains("prefetch caches"));
  auto less = run_command(base + off + " --vram-budget " + std::to_string(fixed + 37 * 384 - 1) + " -o " + plan);
  REQUIRE(less.exit_code == 0);
  CHECK(n_hot(tc::sparse::read_gpu_index(plan, 2, 256)) == 36);

  // Without -o: next to the model, as PowerInfer names it.
  auto default_path = run_command(base + " --vram-budget 40MiB");
  INFO(default_path.output);
  REQUIRE(default_path.exit_code == 0);
  CHECK(std::filesystem::exists(model + ".generated.gpuidx"));

  auto small = run_command(base + " --vram-budget " + std::to_string(fixed - 1));
  CHECK(small.exit_code != 0);
  CHECK_THAT(small.output, Catch::Contains("below the fixed cost") && Catch::Contains(std::to_string(fixed)) &&
                               Catch::Contains("KV cache"));
  auto garbage = run_command(base + " --vram-budget 12XB");
  CHECK(garbage.exit_code != 0);
  CHECK_THAT(garbage.output, Catch::Contains("VRAM budget '12XB'"));
  auto foreign = run_command(bin() + " place -m " + other + " --stats " + stats + " --vram-budget 1GiB");
  CHECK(foreign.exit_code != 0);
  CHECK_THAT(foreign.output, Catch::Contains("recorded on another model"));
  if (tc::kernels::query_gpus().devices.empty()) {
    auto no_budget = run_command(base);
    CHECK(no_budget.exit_code != 0);
    CHECK_THAT(no_budget.output, Catch::Contains("pass --vram-budget"));
  }
}
