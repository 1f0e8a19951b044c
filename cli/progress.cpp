// ProgressBar and TokenProgress drawing; reading a text input.
#include "cli/progress.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace tc::cli {

ProgressBar::ProgressBar(std::string label, std::string count_noun)
    : label_(std::move(label)),
      count_noun_(std::move(count_noun)),
      enabled_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(uint64_t done, uint64_t total) {
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int width = 30;
  const int filled = static_cast<int>(frac * width);
  const double secs = std::chrono::duration<double>(now - start_).count();
  if (count_noun_.empty()) {
    std::fprintf(stderr, "\r%s [%.*s%*s] %5.1f%% %.1f/%.1f MiB %.1fs", label_.c_str(), filled,
                 "##############################", width - filled, "", frac * 100.0,
                 static_cast<double>(done) / 1048576.0, static_cast<double>(total) / 1048576.0, secs);
  } else {
    std::fprintf(stderr, "\r%s [%.*s%*s] %5.1f%% %llu/%llu %s %.1fs", label_.c_str(), filled,
                 "##############################", width - filled, "", frac * 100.0,
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), count_noun_.c_str(),
                 secs);
  }
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  std::fprintf(stderr, "\n");
}

TokenProgress::TokenProgress(std::string label)
    : label_(std::move(label)), tty_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

TokenProgress::~TokenProgress() { clear(); }

void TokenProgress::update(int64_t done, int64_t total) {
  if (!tty_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r\033[K%s: %lld/%lld tokens (%.1f%%), %.0f tokens/s", label_.c_str(),
               static_cast<long long>(done), static_cast<long long>(total),
               total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
               secs > 0 ? static_cast<double>(done) / secs : 0.0);
  std::fflush(stderr);
}

void TokenProgress::clear() {
  if (tty_) std::fprintf(stderr, "\r\033[K");
}

std::string read_text_input(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tc::cli
