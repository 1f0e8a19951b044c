// The Catch2 main shared by every test executable, and the CUDA plugin the
// tests load.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

// CUDA builds: the CUDA backend of every test is the plugin this build made
// (kernels/cuda_plugin_loader.h), unless THERMOCLINE_CUDA_PLUGIN already
// names one or the build tree is not here (the GPU machine's copy:
// scripts/gpu_check.sh sets the variable). Before main, so before any load.
[[maybe_unused]] const bool kCudaPluginChosen = [] {
  const std::string built = THERMOCLINE_TEST_CUDA_PLUGIN;
  std::error_code ec;
  if (!built.empty() && std::filesystem::exists(built, ec)) setenv("THERMOCLINE_CUDA_PLUGIN", built.c_str(), 0);
  return true;
}();

}  // namespace
