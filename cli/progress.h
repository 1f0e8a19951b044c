// A one-line progress bar on stderr, drawn only when stderr is a terminal
// (logs and pipes stay clean). Not thread-safe: call from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tc::cli {

class ProgressBar {
 public:
  // `count_noun` empty: done/total are bytes (shown in MiB); else counts of it ("layers").
  explicit ProgressBar(std::string label, std::string count_noun = {});
  ~ProgressBar();
  void update(uint64_t done, uint64_t total);  // redraws at most ~10 times a second
  void finish();

 private:
  std::string label_;
  std::string count_noun_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
};

// "label: done/total tokens (x%), N tokens/s" on stderr when it is a terminal
// (profile, perplexity); cleared on destruction.
class TokenProgress {
 public:
  explicit TokenProgress(std::string label);
  ~TokenProgress();
  void update(int64_t done, int64_t total);  // redraws at most ~10 times a second
  void clear();

 private:
  std::string label_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
};

// A whole text file (a corpus); throws std::runtime_error naming the path.
std::string read_text_input(const std::string& path);

}  // namespace tc::cli
