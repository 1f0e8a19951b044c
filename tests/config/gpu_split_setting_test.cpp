// The GPU split (placement, prefetch, offload_layers, vram_budget): each mode parses,
// contradictions and modes without CUDA are refused naming the options, and
// the serve keys follow flags > env > file > defaults, report each problem
// under its own key with its source, and print back with --print-config.
#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <vector>

#include "config/gpu_split_setting.h"
#include "config/serve_config.h"
#include "tests/config/config_test_util.h"
#include "tests/test_util.h"

using tc::config::DeviceSetting;
using tc::config::GpuSplitError;
using tc::config::GpuSplitMode;
using tc::config::GpuSplitOption;
using tc::config::parse_gpu_split_setting;
using tc::test::FakeEnv;
using tc::test::resolve;
using tc::test::resolve_error;

namespace {

const DeviceSetting kCuda{.cuda = true, .index = 0};
const DeviceSetting kCpu{};

// The GpuSplitError of a parse; fails the test when none is thrown.
GpuSplitError split_error(const DeviceSetting& device, const std::string& placement, int64_t offload_layers,
                          const std::string& vram_budget) {
  try {
    parse_gpu_split_setting(device, placement, offload_layers, vram_budget);
  } catch (const GpuSplitError& e) {
    return e;
  }
  FAIL("accepted: placement '" << placement << "', offload_layers " << offload_layers << ", vram_budget '"
                               << vram_budget << "'");
  return GpuSplitError(GpuSplitOption::Placement, "");
}

std::vector<std::string> config_flags(const std::string& dir_name, const std::string& toml) {
  const auto dir = tc::test::scratch_dir(dir_name);
  tc::test::write_file(dir / "serve.toml", toml);
  return {"--config", (dir / "serve.toml").string()};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("each GPU split mode parses from its options", "[config][gpu_split]") {
  const auto none = parse_gpu_split_setting(kCpu, "", -1, "");
  CHECK(none.mode == GpuSplitMode::None);
  CHECK_FALSE(none.vram_budget);
  CHECK(parse_gpu_split_setting(kCuda, "", -1, "").mode == GpuSplitMode::None);

  const auto file = parse_gpu_split_setting(kCuda, "plans/m.gpuidx", -1, "");
  CHECK(file.mode == GpuSplitMode::HybridFile);
  CHECK(file.hybrid());
  CHECK(file.placement_file == "plans/m.gpuidx");

  const auto auto_default = parse_gpu_split_setting(kCuda, "auto", -1, "");
  CHECK(auto_default.mode == GpuSplitMode::HybridAuto);
  CHECK(auto_default.hybrid());
  CHECK_FALSE(auto_default.vram_budget);  // the GPU's free memory minus a margin, at load
  const auto auto_budget = parse_gpu_split_setting(kCuda, "auto", -1, "1.5GiB");
  CHECK(auto_budget.mode == GpuSplitMode::HybridAuto);
  CHECK(auto_budget.vram_budget == (uint64_t{3} << 30) / 2);
  CHECK(auto_budget.vram_budget_text == "1.5GiB");
  CHECK(auto_budget.placement_file.empty());

  const auto by_count = parse_gpu_split_setting(kCuda, "", 3, "");
  CHECK(by_count.mode == GpuSplitMode::LayerOffload);
  CHECK_FALSE(by_count.hybrid());
  CHECK(by_count.offload_layers == 3);
  CHECK_FALSE(by_count.vram_budget);
  CHECK(parse_gpu_split_setting(kCuda, "", 0, "").offload_layers == 0);  // k = 0 is a mode too

  const auto by_budget = parse_gpu_split_setting(kCuda, "", -1, "800MiB");
  CHECK(by_budget.mode == GpuSplitMode::LayerOffload);
  CHECK(by_budget.offload_layers == -1);
  CHECK(by_budget.vram_budget == uint64_t{800} << 20);
}

TEST_CASE("contradictory GPU split options are refused naming the options", "[config][gpu_split]") {
  struct Case {
    DeviceSetting device;
    const char* placement;
    int64_t offload_layers;
    const char* vram_budget;
    GpuSplitOption option;
    std::vector<std::string> words;
  };
  const Case cases[] = {
      {kCuda, "", -1, "lots", GpuSplitOption::VramBudget, {"--vram-budget: ", "'lots'"}},
      {kCuda, "auto", -1, "12XB", GpuSplitOption::VramBudget, {"--vram-budget: ", "unknown unit"}},
      {kCuda, "", -2, "", GpuSplitOption::OffloadLayers, {"--offload-layers", "-2"}},
      {kCuda, "m.gpuidx", 2, "", GpuSplitOption::Placement, {"--placement", "--offload-layers", "pick one"}},
      {kCuda, "auto", 0, "", GpuSplitOption::Placement, {"--placement", "--offload-layers", "pick one"}},
      {kCuda, "m.gpuidx", -1, "1GiB", GpuSplitOption::VramBudget, {"--vram-budget", "--placement auto"}},
      {kCuda, "", 2, "1GiB", GpuSplitOption::VramBudget, {"--vram-budget", "--offload-layers", "pick one"}},
      {kCpu, "m.gpuidx", -1, "", GpuSplitOption::Placement, {"--placement", "needs --device cuda"}},
      {kCpu, "auto", -1, "", GpuSplitOption::Placement, {"--placement", "needs --device cuda"}},
      {kCpu, "auto", -1, "1GiB", GpuSplitOption::Placement, {"--placement", "needs --device cuda"}},
      {kCpu, "", 1, "", GpuSplitOption::OffloadLayers, {"--offload-layers", "needs --device cuda"}},
      {kCpu, "", -1, "1GiB", GpuSplitOption::VramBudget, {"--vram-budget", "needs --device cuda"}},
  };
  for (const auto& c : cases) {
    INFO("placement '" << c.placement << "', offload_layers " << c.offload_layers << ", vram_budget '"
                       << c.vram_budget << "', cuda " << c.device.cuda);
    const auto e = split_error(c.device, c.placement, c.offload_layers, c.vram_budget);
    CHECK(e.option() == c.option);
    for (const auto& word : c.words) CHECK_THAT(e.what(), Catch::Contains(word));
  }
}

TEST_CASE("the serve GPU split keys come from flags, env and the file by precedence", "[config][gpu_split]") {
  const auto defaults = resolve({});
  CHECK(defaults.placement.empty());
  CHECK(defaults.offload_layers == -1);
  CHECK(defaults.vram_budget.empty());

  const auto file = config_flags("config_gpu_split_file",
                                 "device = \"cuda\"\nplacement = \"auto\"\nvram_budget = \"2GiB\"\n");
  const auto from_file = resolve(file);
  CHECK(from_file.placement == "auto");  // a keyword, not a path beside the file
  CHECK(from_file.vram_budget == "2GiB");

  FakeEnv env;
  env.vars = {{"THERMOCLINE_VRAM_BUDGET", "3GiB"}};
  CHECK(resolve(file, env).vram_budget == "3GiB");
  std::vector<std::string> args = file;
  args.insert(args.end(), {"--vram-budget", "4GiB"});
  CHECK(resolve(args, env).vram_budget == "4GiB");

  // Layer offload from env; a flag overrides it.
  env.vars = {{"THERMOCLINE_DEVICE", "cuda:1"}, {"THERMOCLINE_OFFLOAD_LAYERS", "5"}};
  const auto offload = resolve({}, env);
  CHECK(offload.offload_layers == 5);
  CHECK(resolve({"--offload-layers", "7"}, env).offload_layers == 7);

  // A placement file in the config file is relative to its folder, like the other paths.
  const auto dir = tc::test::scratch_dir("config_gpu_split_relative");
  tc::test::write_file(dir / "serve.toml", "device = \"cuda\"\nplacement = \"plans/m.gpuidx\"\n");
  CHECK(resolve({"--config", (dir / "serve.toml").string()}).placement == dir / "plans/m.gpuidx");
  CHECK(resolve({"--device", "cuda", "--placement", "plans/m.gpuidx"}).placement == "plans/m.gpuidx");
}

TEST_CASE("invalid serve GPU split values are refused at start under their key and source", "[config][gpu_split]") {
  const auto bad_budget = resolve_error({"--device", "cuda", "--vram-budget", "lots"});
  CHECK(bad_budget.key == "vram_budget");
  CHECK(bad_budget.source == "flag --vram-budget");
  CHECK(contains(bad_budget.message, "lots"));

  FakeEnv env;
  env.vars = {{"THERMOCLINE_PLACEMENT", "auto"}};
  const auto on_cpu = resolve_error({}, env);
  CHECK(on_cpu.key == "placement");
  CHECK(on_cpu.source == "env THERMOCLINE_PLACEMENT");
  CHECK(contains(on_cpu.message, "needs --device cuda"));

  const auto file_and_budget =
      resolve_error(config_flags("config_gpu_split_contra", "device = \"cuda\"\nplacement = \"m.gpuidx\"\n"
                                                            "vram_budget = \"1GiB\"\n"));
  CHECK(file_and_budget.key == "vram_budget");
  CHECK(contains(file_and_budget.source, "serve.toml:3"));
  CHECK(contains(file_and_budget.message, "--placement auto"));

  const auto two_modes = resolve_error({"--device", "cuda", "--placement", "auto", "--offload-layers", "1"});
  CHECK(two_modes.key == "placement");
  CHECK(contains(two_modes.message, "pick one"));
  const auto two_ks = resolve_error({"--device", "cuda", "--offload-layers", "1", "--vram-budget", "1GiB"});
  CHECK(two_ks.key == "vram_budget");
  const auto offload_on_cpu = resolve_error({"--offload-layers", "1"});
  CHECK(offload_on_cpu.key == "offload_layers");
  CHECK(contains(offload_on_cpu.message, "needs --device cuda"));
  const auto below_off = resolve_error({"--device", "cuda", "--offload-layers", "-2"});
  CHECK(below_off.key == "offload_layers");
  CHECK(contains(below_off.message, "-1.."));

  const auto toml_type = resolve_error(config_flags("config_gpu_split_type", "vram_budget = 1024\n"));
  CHECK(toml_type.key == "vram_budget");
  CHECK(contains(toml_type.message, "expected a string"));
}

TEST_CASE("print-config shows the GPU split keys and reads them back", "[config][gpu_split]") {
  const auto o = resolve({"--device", "cuda:1", "--placement", "auto", "--vram-budget", "12GiB"});
  const std::string toml = tc::config::to_toml(o);
  CHECK(contains(toml, "placement = \"auto\""));
  CHECK(contains(toml, "offload_layers = -1"));
  CHECK(contains(toml, "vram_budget = \"12GiB\""));
  const auto back = resolve(config_flags("config_gpu_split_print", toml));
  CHECK(tc::config::to_toml(back) == toml);
}

TEST_CASE("prefetch parses with hybrid mode and is refused without it or with a bad value", "[config][gpu_split]") {
  using tc::config::PrefetchSetting;
  CHECK(parse_gpu_split_setting(kCuda, "auto", -1, "").prefetch == PrefetchSetting::Auto);
  CHECK(parse_gpu_split_setting(kCuda, "m.gpuidx", -1, "", "on").prefetch == PrefetchSetting::On);
  CHECK(parse_gpu_split_setting(kCuda, "auto", -1, "", "off").prefetch == PrefetchSetting::Off);
  // auto and off mean nothing without hybrid mode, and are accepted there.
  CHECK(parse_gpu_split_setting(kCpu, "", -1, "", "off").mode == GpuSplitMode::None);
  CHECK(parse_gpu_split_setting(kCuda, "", 2, "", "auto").mode == GpuSplitMode::LayerOffload);

  for (const auto& [placement, offload_layers, prefetch, words] :
       {std::tuple<std::string, int64_t, std::string, std::vector<std::string>>{
            "", -1, "on", {"--prefetch on", "--placement"}},
        {"", 2, "on", {"--prefetch on", "--placement"}},
        {"auto", -1, "sometimes", {"--prefetch", "'sometimes'", "on, off or auto"}}}) {
    INFO("placement '" << placement << "', prefetch '" << prefetch << "'");
    try {
      parse_gpu_split_setting(kCuda, placement, offload_layers, "", prefetch);
      FAIL("accepted");
    } catch (const GpuSplitError& e) {
      CHECK(e.option() == GpuSplitOption::Prefetch);
      for (const auto& word : words) CHECK_THAT(e.what(), Catch::Contains(word));
    }
  }

  // The serve key: default, precedence, refusal under its own key, print-config.
  CHECK(resolve({}).prefetch == "auto");
  FakeEnv env;
  env.vars = {{"THERMOCLINE_PREFETCH", "off"}};
  const auto file = config_flags("config_gpu_split_prefetch", "device = \"cuda\"\nplacement = \"auto\"\n"
                                                              "prefetch = \"on\"\n");
  CHECK(resolve(file).prefetch == "on");
  CHECK(resolve(file, env).prefetch == "off");
  std::vector<std::string> args = file;
  args.insert(args.end(), {"--prefetch", "auto"});
  CHECK(resolve(args, env).prefetch == "auto");
  const auto without_hybrid = resolve_error({"--device", "cuda", "--prefetch", "on"});
  CHECK(without_hybrid.key == "prefetch");
  CHECK(without_hybrid.source == "flag --prefetch");
  CHECK(contains(without_hybrid.message, "needs --placement"));
  const auto bad = resolve_error({"--prefetch", "sometimes"});
  CHECK(bad.key == "prefetch");
  CHECK(contains(tc::config::to_toml(resolve(file)), "prefetch = \"on\""));
}
