// A one-line progress bar on stderr, drawn only when stderr is a terminal
// (logs and pipes stay clean). Not thread-safe: call from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tc::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();
  void update(uint64_t done, uint64_t total);  // redraws at most ~10 times a second
  void finish();

 private:
  std::string label_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace tc::cli
