// The CUDA plugin loader: query_gpus() and make_cuda_backend() forward to
// libthermocline_cuda.so, dlopen()ed on first use, or report why it is not
// there. The one place that knows whether the CUDA backend can be had.
#include "kernels/cuda_plugin_loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "kernels/cuda_backend_entry.h"

namespace tc::kernels {
namespace {

namespace fs = std::filesystem;

// Set by CMake: whether this build made the plugin, and the configured
// install prefix's plugin folder.
constexpr bool kPluginBuilt = THERMOCLINE_CUDA_PLUGIN_BUILT;
constexpr const char* kPluginInstallDir = THERMOCLINE_CUDA_PLUGIN_INSTALL_DIR;
constexpr const char* kPluginEnv = "THERMOCLINE_CUDA_PLUGIN";

std::string env_plugin_path() {
  const char* env = std::getenv(kPluginEnv);
  return env != nullptr ? env : "";
}

std::string last_dl_error() {
  const char* err = dlerror();
  return err != nullptr ? err : "unknown dlerror";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

std::vector<std::string> cuda_plugin_candidates() {
  const std::string env = env_plugin_path();
  if (!env.empty()) {
    // A bare name would make dlopen search the library path: it is a file.
    std::error_code ec;
    const fs::path absolute = fs::absolute(env, ec);
    return {ec ? env : absolute.string()};
  }
  std::vector<fs::path> dirs;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path());
    dirs.push_back((exe.parent_path() / ".." / "lib" / "thermocline").lexically_normal());
  }
  dirs.push_back(fs::path(kPluginInstallDir).lexically_normal());
  std::vector<std::string> out;
  for (const auto& dir : dirs) {
    const std::string file = (dir / kCudaPluginFileName).string();
    if (std::find(out.begin(), out.end(), file) == out.end()) out.push_back(file);
  }
  return out;
}

CudaPluginLoad load_cuda_plugin_file(const std::string& file) {
  CudaPluginLoad load;
  load.path = file;
  // RTLD_LOCAL: the plugin's symbols (its own copies of kernels/ code) stay
  // its own; it exports only the entry anyway.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    load.error = "CUDA plugin " + file + " could not be loaded: " + last_dl_error();
    return load;
  }
  dlerror();
  void* symbol = dlsym(handle, kCudaPluginEntrySymbol);
  if (symbol == nullptr) {
    load.error = "CUDA plugin " + file + " has no entry " + kCudaPluginEntrySymbol + ": " + last_dl_error();
    return load;
  }
  const CudaPluginApi* api = reinterpret_cast<CudaPluginEntry>(symbol)();
  if (api == nullptr) {
    load.error = "CUDA plugin " + file + ": its entry " + kCudaPluginEntrySymbol + " returned no table";
    return load;
  }
  if (api->abi_version != kCudaPluginAbiVersion) {
    load.error = "CUDA plugin " + file + " has ABI version " + std::to_string(api->abi_version) +
                 ", this binary needs version " + std::to_string(kCudaPluginAbiVersion) +
                 " (a plugin from another build: install the binary and the plugin together)";
    return load;
  }
  if (api->query_gpus == nullptr || api->make_cuda_backend == nullptr) {
    load.error = "CUDA plugin " + file + ": its table lacks query_gpus or make_cuda_backend";
    return load;
  }
  load.api = api;
  return load;
}

CudaPluginLoad find_and_load_cuda_plugin() {
  const std::vector<std::string> candidates = cuda_plugin_candidates();
  if (!env_plugin_path().empty()) return load_cuda_plugin_file(candidates.front());
  for (const auto& file : candidates) {
    std::error_code ec;
    if (fs::exists(file, ec)) return load_cuda_plugin_file(file);
  }
  CudaPluginLoad none;
  // A CPU-only build says what it always said; it still loads a plugin
  // that is there.
  none.error = kPluginBuilt ? "no CUDA plugin found (looked for " + join(candidates) + "; set " + kPluginEnv +
                                  " to its path)"
                            : "this build has no CUDA backend (built with THERMOCLINE_CUDA=OFF or without nvcc)";
  return none;
}

const CudaPluginLoad& cuda_plugin() {
  static const CudaPluginLoad load = find_and_load_cuda_plugin();
  return load;
}

GpuInventory query_gpus() {
  GpuInventory inv;
  try {
    const CudaPluginLoad& plugin = cuda_plugin();
    if (plugin.api == nullptr) {
      inv.status = plugin.error;
      return inv;
    }
    inv.cuda_built = true;
    return plugin.api->query_gpus();
  } catch (const std::exception& e) {
    // The plugin's query never throws; an allocation failure still may.
    inv.devices.clear();
    inv.status = std::string("querying GPUs failed: ") + e.what();
    return inv;
  }
}

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  const CudaPluginLoad& plugin = cuda_plugin();
  if (plugin.api == nullptr) throw BackendUnavailable("CUDA backend requested, but " + plugin.error);
  return plugin.api->make_cuda_backend(options);
}

}  // namespace tc::kernels
