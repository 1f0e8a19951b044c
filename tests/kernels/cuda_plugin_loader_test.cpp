// The CUDA plugin loader (kernels/cuda_plugin_loader.h) on files that are
// not a usable plugin (missing, not ELF, no entry, wrong ABI version), on the
// fake plugin (a CudaError thrown inside it is caught here by type), and the
// lookup order. Needs no GPU and no CUDA build.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "kernels/cuda_error.h"
#include "kernels/cuda_plugin_loader.h"
#include "tests/kernels/fake_plugin/fake_cuda_plugin.h"
#include "tests/test_util.h"

using tc::kernels::CudaPluginLoad;
using tc::kernels::load_cuda_plugin_file;

namespace {

namespace fs = std::filesystem;

// Sets (or with nullopt unsets) THERMOCLINE_CUDA_PLUGIN for one scope.
class PluginEnv {
 public:
  explicit PluginEnv(const std::optional<std::string>& value) {
    const char* old = std::getenv("THERMOCLINE_CUDA_PLUGIN");
    if (old != nullptr) old_ = old;
    if (value) {
      setenv("THERMOCLINE_CUDA_PLUGIN", value->c_str(), 1);
    } else {
      unsetenv("THERMOCLINE_CUDA_PLUGIN");
    }
  }
  ~PluginEnv() {
    if (old_) {
      setenv("THERMOCLINE_CUDA_PLUGIN", old_->c_str(), 1);
    } else {
      unsetenv("THERMOCLINE_CUDA_PLUGIN");
    }
  }

 private:
  std::optional<std::string> old_;
};

void check_refused(const CudaPluginLoad& load, const std::string& file, const std::string& why) {
  INFO(load.error);
  CHECK(load.api == nullptr);
  CHECK(load.path == file);
  CHECK_THAT(load.error, Catch::Contains("CUDA plugin " + file) && Catch::Contains(why));
}

}  // namespace

TEST_CASE("cuda plugin loader: files that are no usable plugin are refused naming the file and why",
          "[kernels][plugin]") {
  const auto dir = tc::test::scratch_dir("cuda_plugin_loader_refused");
  SECTION("missing file: dlerror") {
    const std::string file = (dir / "missing" / "libthermocline_cuda.so").string();
    check_refused(load_cuda_plugin_file(file), file, "could not be loaded: " + file);
    CHECK_THAT(load_cuda_plugin_file(file).error, Catch::Contains("No such file"));
  }
  SECTION("not an ELF file: dlerror") {
    const std::string file = (dir / "libthermocline_cuda.so").string();
    tc::test::write_file(file, std::string(200, 'x') + "\nthis is a text file, not a shared library\n");
    check_refused(load_cuda_plugin_file(file), file, "could not be loaded: ");
    CHECK_THAT(load_cuda_plugin_file(file).error, Catch::Contains("ELF"));
  }
  SECTION("a shared library without the entry") {
    const std::string file = tc::test::fake_cuda_plugin("no_entry").string();
    check_refused(load_cuda_plugin_file(file), file, "has no entry thermocline_cuda_plugin_entry");
  }
  SECTION("a plugin of another ABI version") {
    const std::string file = tc::test::fake_cuda_plugin("wrong_abi").string();
    check_refused(load_cuda_plugin_file(file), file,
                  "has ABI version " + std::to_string(tc::test::kFakeWrongAbiVersion) + ", this binary needs version " +
                      std::to_string(tc::kernels::kCudaPluginAbiVersion));
  }
}

TEST_CASE("cuda plugin loader: the fake plugin's table works and its CudaError is caught by type here",
          "[kernels][plugin]") {
  const std::string file = tc::test::fake_cuda_plugin("").string();
  const CudaPluginLoad load = load_cuda_plugin_file(file);
  INFO(load.error);
  REQUIRE(load.api != nullptr);
  CHECK(load.error.empty());
  CHECK(load.api->abi_version == tc::kernels::kCudaPluginAbiVersion);
  const auto gpus = load.api->query_gpus();
  CHECK(gpus.cuda_built);
  REQUIRE(gpus.devices.size() == 1);
  CHECK(gpus.devices[0].name == tc::test::kFakeGpuName);
  // The plugin keeps its CudaError typeinfo local (cmake/cuda_plugin.map);
  // the catch must still match it.
  bool caught = false;
  try {
    load.api->make_cuda_backend({.n_threads = 1, .device_index = 3});
  } catch (const tc::kernels::CudaError& e) {
    caught = true;
    CHECK(e.code() == tc::test::kFakeCudaErrorCode);
    CHECK_THAT(e.what(), Catch::Contains("fake plugin") && Catch::Contains("device 3"));
  }
  CHECK(caught);
}

TEST_CASE("cuda plugin loader: THERMOCLINE_CUDA_PLUGIN, then next to the executable, then the install prefix",
          "[kernels][plugin]") {
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe").parent_path();
  SECTION("the variable is the only candidate, made absolute, and is not fallen back from") {
    const auto dir = tc::test::scratch_dir("cuda_plugin_env");
    const fs::path cwd = fs::current_path();
    fs::current_path(dir);
    PluginEnv env(std::string("plugins/libmine.so"));
    const auto candidates = tc::kernels::cuda_plugin_candidates();
    const auto load = tc::kernels::find_and_load_cuda_plugin();
    fs::current_path(cwd);
    const std::string expected = (fs::canonical(dir) / "plugins" / "libmine.so").string();
    REQUIRE(candidates.size() == 1);
    CHECK(fs::path(candidates[0]).lexically_normal() == fs::path(expected));
    CHECK(load.api == nullptr);
    CHECK_THAT(load.error, Catch::Contains("libmine.so") && Catch::Contains("could not be loaded"));
  }
  SECTION("unset: the executable's folder, bin/../lib/thermocline, the configured prefix") {
    PluginEnv env(std::nullopt);
    const auto candidates = tc::kernels::cuda_plugin_candidates();
    REQUIRE(candidates.size() >= 2);
    CHECK(candidates[0] == (exe_dir / "libthermocline_cuda.so").string());
    CHECK(candidates[1] == (exe_dir.parent_path() / "lib" / "thermocline" / "libthermocline_cuda.so").string());
    CHECK_THAT(candidates.back(), Catch::EndsWith("lib/thermocline/libthermocline_cuda.so"));
    const auto load = tc::kernels::find_and_load_cuda_plugin();
    // Nothing sits next to the test binaries; an installed plugin may.
    if (load.path.empty()) {
      CHECK(load.api == nullptr);
      if (tc::test::built_cuda_plugin().empty()) {
        CHECK(load.error == "this build has no CUDA backend (built with THERMOCLINE_CUDA=OFF or without nvcc)");
      } else {
        CHECK_THAT(load.error, Catch::Contains("no CUDA plugin found") && Catch::Contains(candidates[0]) &&
                                   Catch::Contains("THERMOCLINE_CUDA_PLUGIN"));
      }
    }
  }
}
