// bench_args: the command-line reading the bench programs share: a reader
// that walks argv flag by flag (a missing value or an unknown flag prints
// the program's usage text and exits with status 2), a comma-list splitter,
// and reading an input file whole.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tc::bench {

// The items of a comma-separated list, empty ones dropped: "1,,2" -> {"1", "2"}.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The bytes of `path`; on failure prints "<program>: cannot read <path>" and exits with status 1.
inline std::string read_file(const char* program, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read %s\n", program, path.c_str());
    std::exit(1);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Walks argv[1..argc) one flag at a time:
//   ArgReader args(argc, argv, kUsage);
//   while (args.next()) {
//     if (args.flag() == "-t") o.threads = args.int_value();
//     else args.usage();
//   }
// `usage_text` (not owned; a string literal) is printed to stderr as is.
class ArgReader {
 public:
  ArgReader(int argc, char** argv, const char* usage_text) : argc_(argc), argv_(argv), usage_text_(usage_text) {}

  // Moves to the next flag; false when argv is used up.
  bool next() {
    if (i_ + 1 >= argc_) return false;
    flag_ = argv_[++i_];
    return true;
  }
  const std::string& flag() const { return flag_; }

  // The current flag's value (the next argument, consumed); usage() when there is none.
  std::string value() {
    if (i_ + 1 >= argc_) usage();
    return argv_[++i_];
  }
  int int_value() { return std::atoi(value().c_str()); }
  int64_t int64_value() { return std::atoll(value().c_str()); }

  // Prints the usage text and exits with status 2 (a bad or unknown flag,
  // a missing value, or options the program rejects).
  [[noreturn]] void usage() const {
    std::fputs(usage_text_, stderr);
    std::exit(2);
  }

 private:
  int argc_;
  char** argv_;
  const char* usage_text_;
  int i_ = 0;  // index of the argument last read
  std::string flag_;
};

}  // namespace tc::bench
