// Helpers shared by the tests: scratch directories, seeded random data, and
// the paths of the source tree and the built binary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace tc::test {

// A fresh, empty directory under the build tree's test scratch area, named
// after `name` and this process (CTest runs test cases in parallel
// processes); removed and recreated on each call, and removed when the
// process exits unless THERMOCLINE_KEEP_SCRATCH is set.
std::filesystem::path scratch_dir(const std::string& name);

// n normally distributed floats (mean 0, sd `scale`) from a fixed seed; never
// all zeros.
std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 1.0f);

// n token ids uniform in [0, n_vocab) from a fixed seed (mt19937_64).
std::vector<int32_t> random_tokens(size_t n, uint64_t seed, int64_t n_vocab);

// n bytes of seeded random data (the bytes of random_floats).
std::vector<std::byte> random_bytes(size_t n, uint64_t seed);

// Reads a whole file into a string; throws on failure.
std::string read_file(const std::filesystem::path& path);
// Writes bytes to a file, replacing it.
void write_file(const std::filesystem::path& path, const std::string& bytes);

std::filesystem::path source_dir();   // the repo root (env THERMOCLINE_TEST_SOURCE_DIR overrides)
std::filesystem::path thermocline_binary();  // env THERMOCLINE_TEST_BINARY overrides
// The CUDA plugin this build made (kernels/CMakeLists.txt); empty in a
// CPU-only build.
std::filesystem::path built_cuda_plugin();
// The fake CUDA plugins (tests/kernels/fake_plugin/): variant "" has this
// binary's ABI version, "wrong_abi" another one, "no_entry" no entry.
std::filesystem::path fake_cuda_plugin(const std::string& variant);

// Single-quotes `s` for sh (embedded quotes escaped).
std::string shell_quote(const std::string& s);

// Runs a shell command, returns its exit status and captures stdout+stderr.
struct CommandResult {
  int exit_code;
  std::string output;
};
CommandResult run_command(const std::string& command);

}  // namespace tc::test
