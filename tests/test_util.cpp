// Implementation of the shared test helpers.
#include "tests/test_util.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace tc::test {

namespace {

// Removes this process's scratch directories at exit.
struct ScratchCleanup {
  std::vector<std::filesystem::path> dirs;
  ~ScratchCleanup() {
    if (std::getenv("THERMOCLINE_KEEP_SCRATCH") != nullptr) return;
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
ScratchCleanup scratch_cleanup;

}  // namespace

std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::current_path() / "scratch" / (name + "." + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  scratch_cleanup.dirs.push_back(dir);
  return dir;
}

std::vector<float> random_floats(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> out(n);
  for (auto& v : out) v = dist(rng);
  return out;
}

std::vector<int32_t> random_tokens(size_t n, uint64_t seed, int64_t n_vocab) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> out(n);
  for (auto& t : out) t = static_cast<int32_t>(rng() % static_cast<uint64_t>(n_vocab));
  return out;
}

std::vector<std::byte> random_bytes(size_t n, uint64_t seed) {
  const auto f = random_floats((n + 3) / 4, seed);
  std::vector<std::byte> out(n);
  std::memcpy(out.data(), f.data(), n);
  return out;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The build's paths, unless the environment moves them (test binaries run
// from a copy of the tree elsewhere, as on the GPU machine: scripts/gpu_check.sh).
std::filesystem::path source_dir() {
  const char* moved = std::getenv("THERMOCLINE_TEST_SOURCE_DIR");
  return moved != nullptr && *moved != '\0' ? moved : THERMOCLINE_SOURCE_DIR;
}
std::filesystem::path thermocline_binary() {
  const char* moved = std::getenv("THERMOCLINE_TEST_BINARY");
  return moved != nullptr && *moved != '\0' ? moved : THERMOCLINE_BINARY;
}

std::filesystem::path built_cuda_plugin() { return THERMOCLINE_TEST_CUDA_PLUGIN; }
std::filesystem::path fake_cuda_plugin(const std::string& variant) {
  const std::string stem = variant.empty() ? "libtc_fake_cuda_plugin" : "libtc_fake_cuda_plugin_" + variant;
  return std::filesystem::path(THERMOCLINE_TEST_FAKE_PLUGIN_DIR) / (stem + ".so");
}

CommandResult run_command(const std::string& command) {
  std::string full = command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  std::string output;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) output.append(buf.data(), n);
  int status = pclose(pipe);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return {code, output};
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace tc::test
