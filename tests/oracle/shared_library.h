// dlopen/dlsym helpers shared by the llama.cpp oracles (libggml-base,
// libllama): open a library for the life of the process and resolve C
// functions into typed slots, collecting the names of missing symbols.
#pragma once

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace tc::oracle {

// dlopen()s `path` (never closed). Returns nullptr and sets `reason` when
// the file is absent (naming `env_var`, which can point elsewhere) or fails
// to load.
inline void* open_shared_library(const std::filesystem::path& path, std::string_view env_var,
                                 std::string& reason) {
  if (!std::filesystem::exists(path)) {
    reason = "no library at " + path.string() + " (run scripts/setup.sh, or point " + std::string(env_var) +
             " at " + path.filename().string() + ")";
    return nullptr;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    reason = "dlopen(" + path.string() + ") failed: " + (err ? err : "unknown error");
  }
  return handle;
}

// Sets `slot` to the function `name`, or appends `name` to `missing`.
template <typename Fn>
bool resolve_symbol(void* handle, const char* name, Fn& slot, std::string& missing) {
  void* sym = dlsym(handle, name);
  if (sym == nullptr) {
    missing += missing.empty() ? name : std::string(", ") + name;
    return false;
  }
  slot = reinterpret_cast<Fn>(sym);
  return true;
}

}  // namespace tc::oracle
