// What the fake CUDA plugin (fake_cuda_plugin.cpp) reports, for the tests
// that load it.
#pragma once

namespace tc::test {

inline constexpr int kFakeCudaErrorCode = 77;       // CudaError::code() of its make_cuda_backend
inline constexpr const char* kFakeGpuName = "Fake GPU";
inline constexpr unsigned kFakeWrongAbiVersion = 999;  // the wrong-ABI build's version

}  // namespace tc::test
