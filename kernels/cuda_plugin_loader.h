// Finding and loading the CUDA plugin (libthermocline_cuda.so) with dlopen,
// on the first query_gpus() or make_cuda_backend(), which this loader
// defines (kernels/device_info.h, kernels/cuda_backend_entry.h). The main
// binary so links no CUDA library; the plugin carries the CUDA backend.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda_plugin_abi.h"

namespace tc::kernels {

// What one attempt to load the plugin gave.
struct CudaPluginLoad {
  const CudaPluginApi* api = nullptr;  // null: not loaded, `error` says why
  std::string path;                    // the file loaded or tried; empty when none was found
  std::string error;                   // names the file and dlerror() (or what was looked for)
};

// Where the plugin is looked for, in order: $THERMOCLINE_CUDA_PLUGIN (a file
// path; when set, the only candidate), else the executable's directory
// (/proc/self/exe), then the install prefix's lib/thermocline/ (the one the
// executable sits in, bin/../lib/thermocline, then the configured
// CMAKE_INSTALL_PREFIX). Duplicates dropped.
std::vector<std::string> cuda_plugin_candidates();

// dlopen()s `file`, looks up the entry and checks its ABI version. Never
// throws. A library that loads stays loaded for the life of the process,
// whatever the outcome (its code may be running).
CudaPluginLoad load_cuda_plugin_file(const std::string& file);

// The env path if set, else the first candidate that exists, loaded with
// load_cuda_plugin_file(). Never throws; not cached.
CudaPluginLoad find_and_load_cuda_plugin();

// find_and_load_cuda_plugin() once per process (the first call loads;
// thread-safe); what query_gpus() and make_cuda_backend() use.
const CudaPluginLoad& cuda_plugin();

}  // namespace tc::kernels
