// The CUDA plugin seen from the real binary: `thermocline` and the test
// binaries link no CUDA library (readelf NEEDED); THERMOCLINE_CUDA_PLUGIN
// at a missing file, a non-ELF file, a wrong-ABI or a throwing plugin makes
// `--device cuda` fail naming the file and why while `--device cpu` works;
// with the build's plugin found next to the binary and no GPU, generate and
// serve say there is no CUDA device instead of crashing.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "kernels/device_info.h"
#include "tests/integration/server_fixture.h"
#include "tests/kernels/fake_plugin/fake_cuda_plugin.h"
#include "tests/test_util.h"

using tc::test::run_command;
using tc::test::shell_quote;

namespace {

std::string bin() { return tc::test::thermocline_binary().string(); }

std::string make_tiny_model(const std::string& name) {
  const auto path = (tc::test::scratch_dir(name) / "tiny.gguf").string();
  const auto r = run_command(bin() + " make-model -o " + path +
                             " --n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024"
                             " --type q8_0 --seed 5");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return path;
}

// The NEEDED entries of an ELF file, one "0x... (NEEDED) Shared library: [x]" per line.
std::string needed_libraries(const std::string& file) {
  const auto r = run_command("readelf -d " + shell_quote(file) + " | grep NEEDED");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

// `generate` with THERMOCLINE_CUDA_PLUGIN set to `plugin` ("": unset).
tc::test::CommandResult generate_with_plugin(const std::string& plugin, const std::string& model,
                                             const std::string& device) {
  const std::string env = plugin.empty() ? "env -u THERMOCLINE_CUDA_PLUGIN "
                                         : "env THERMOCLINE_CUDA_PLUGIN=" + shell_quote(plugin) + " ";
  return run_command(env + bin() + " generate -m " + model + " --device " + device +
                     " -p 'The hacker' -n 4 --temp 0 -t 1");
}

bool has_gpu() {
  const auto gpus = tc::kernels::query_gpus();
  return gpus.cuda_built && !gpus.devices.empty();
}

}  // namespace

TEST_CASE("cuda plugin: the binary and the tests link no CUDA library, the plugin does", "[integration][plugin]") {
  for (const std::string& file : {bin(), std::filesystem::read_symlink("/proc/self/exe").string()}) {
    INFO(file);
    const std::string needed = needed_libraries(file);
    INFO(needed);
    CHECK_THAT(needed, Catch::Contains("libc.so"));
    CHECK_THAT(needed, !Catch::Contains("libcublas") && !Catch::Contains("libcudart") &&
                           !Catch::Contains("libcuda.so"));
  }
  const auto plugin = tc::test::built_cuda_plugin();
  if (plugin.empty()) return;  // CPU-only build
  // Built next to the binary, where the loader looks after the variable.
  CHECK(plugin.parent_path() == std::filesystem::path(THERMOCLINE_BINARY).parent_path());
  const std::string needed = needed_libraries(plugin.string());
  INFO(needed);
  CHECK_THAT(needed, Catch::Contains("libcublas.so"));
  CHECK_THAT(needed, !Catch::Contains("libcudart"));  // the static runtime
}

TEST_CASE("cuda plugin: a bad THERMOCLINE_CUDA_PLUGIN fails --device cuda naming the file, --device cpu works",
          "[integration][plugin]") {
  const auto model = make_tiny_model("plugin_cli_bad");
  const auto dir = tc::test::scratch_dir("plugin_cli_bad_files");
  const std::string missing = (dir / "nowhere" / "libthermocline_cuda.so").string();
  const std::string text = (dir / "libthermocline_cuda.so").string();
  tc::test::write_file(text, std::string(200, '#') + "\nnot a shared library\n");
  const std::string wrong_abi = tc::test::fake_cuda_plugin("wrong_abi").string();
  struct Case {
    std::string plugin;
    std::string why;
  };
  const Case cases[] = {
      {missing, "No such file"},
      {text, "ELF"},
      {wrong_abi, "has ABI version " + std::to_string(tc::test::kFakeWrongAbiVersion)},
  };
  for (const auto& c : cases) {
    INFO(c.plugin);
    const auto cuda = generate_with_plugin(c.plugin, model, "cuda");
    INFO(cuda.output);
    CHECK(cuda.exit_code == 1);
    CHECK_THAT(cuda.output, Catch::Contains("error: ") && Catch::Contains("CUDA backend requested, but CUDA plugin " +
                                                                          c.plugin) &&
                                Catch::Contains(c.why));
    const auto cpu = generate_with_plugin(c.plugin, model, "cpu");
    INFO(cpu.output);
    CHECK(cpu.exit_code == 0);
    CHECK_THAT(cpu.output, Catch::Contains("The hacker"));
  }
}

TEST_CASE("cuda plugin: a CudaError thrown inside the plugin reaches the binary's error path",
          "[integration][plugin]") {
  const auto model = make_tiny_model("plugin_cli_throws");
  const auto r = generate_with_plugin(tc::test::fake_cuda_plugin("").string(), model, "cuda");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("error: CUDA error: the fake plugin makes no backend (device 0)"));
}

TEST_CASE("cuda plugin: without a GPU, generate and serve --device cuda say why instead of crashing",
          "[integration][plugin]") {
  if (has_gpu()) {
    WARN("SKIPPED: this machine has a GPU");
    return;
  }
  const bool cuda_build = !tc::test::built_cuda_plugin().empty();
  // The variable unset: a CUDA build's plugin is found next to the binary.
  const std::string expected =
      cuda_build ? "CUDA backend requested, but no CUDA device: " : "this build has no CUDA backend";
  const auto model = make_tiny_model("plugin_cli_no_gpu");
  const auto r = generate_with_plugin("", model, "cuda");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("error: ") && Catch::Contains(expected));

  const auto dir = tc::test::scratch_dir("plugin_serve_no_gpu");
  tc::test::ServerLaunch launch;
  launch.require_ready = false;
  tc::test::ServerProcess server(launch, model, {"--device", "cuda", "-t", "1", "--ctx-size", "128"}, dir);
  auto client = server.client();
  const auto [status, body] = tc::test::wait_until_loaded(client);
  INFO(body << "\n" << server.log());
  CHECK(status == 503);
  CHECK_THAT(body, Catch::Contains(cuda_build ? "no CUDA device" : "no CUDA backend"));
  CHECK_THAT(server.log(), Catch::Contains(cuda_build ? "gpu: no CUDA device" : "gpu: this build has no CUDA backend"));
  CHECK(server.stop() == 0);
}
