// vocab_load_bench: how long a model's tokenizer takes to load, in the three
// steps load_model takes: GgufFile::open (parse the metadata), read_vocab
// (the tokenizer.* keys into a Vocab), Tokenizer::create (indexes, merge
// ranks, pieces). Medians over rounds, in milliseconds.
//   vocab_load_bench [--family qwen2,gemma3] [--file GGUF]... [-r ROUNDS]
// --family makes each family's vocab (profiler/family_vocab.h; learning it
// takes seconds and is not timed) and writes it as a vocab-only GGUF file
// under $TMPDIR; --file times an existing file (a real model's).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/tokenizer.h"
#include "engine/text/vocab.h"
#include "profiler/family_vocab.h"

namespace {

constexpr const char* kUsage =
    "usage: vocab_load_bench [--family qwen2,gemma3] [--file GGUF]... [-r ROUNDS]\n"
    "  times GgufFile::open, read_vocab and Tokenizer::create (medians, ms)\n";

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::filesystem::path write_family(tc::profiler::VocabFamily family) {
  const tc::text::Vocab vocab = tc::profiler::make_family_vocab(family);
  const auto path = std::filesystem::temp_directory_path() /
                    ("vocab_load_bench_" + std::string(tc::profiler::vocab_family_name(family)) + ".gguf");
  tc::gguf::GgufWriter w;
  w.set("general.architecture", tc::gguf::Value(std::string("llama")));
  tc::text::write_vocab(vocab, w);
  w.write(path);
  return path;
}

void time_file(const std::filesystem::path& path, int rounds) {
  std::vector<double> parse, read, create, total;
  int32_t n_vocab = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    const auto file = tc::gguf::GgufFile::open(path);
    const double t_parse = ms_since(t0);
    const auto t1 = Clock::now();
    tc::text::Vocab vocab = tc::text::read_vocab(file);
    const double t_read = ms_since(t1);
    const auto t2 = Clock::now();
    const auto tokenizer = tc::text::Tokenizer::create(std::move(vocab));
    const double t_create = ms_since(t2);
    n_vocab = tokenizer->n_vocab();
    parse.push_back(t_parse);
    read.push_back(t_read);
    create.push_back(t_create);
    total.push_back(ms_since(t0));
  }
  std::printf("%-40s %8d %9.1f %9.1f %9.1f %9.1f\n", path.filename().string().c_str(), n_vocab, median(parse),
              median(read), median(create), median(total));
}

}  // namespace

int main(int argc, char** argv) {
  tc::bench::ArgReader args(argc, argv, kUsage);
  std::vector<std::filesystem::path> files;
  std::vector<tc::profiler::VocabFamily> families;
  int rounds = 5;
  while (args.next()) {
    if (args.flag() == "--family") {
      for (const auto& name : tc::bench::split_list(args.value())) {
        const auto family = tc::profiler::vocab_family_from_name(name);
        if (!family) args.usage();
        families.push_back(*family);
      }
    } else if (args.flag() == "--file") {
      files.emplace_back(args.value());
    } else if (args.flag() == "-r") {
      rounds = std::max(1, args.int_value());
    } else {
      args.usage();
    }
  }
  if (files.empty() && families.empty()) {
    families = {tc::profiler::VocabFamily::Qwen2, tc::profiler::VocabFamily::Gemma3};
  }
  for (const auto family : families) files.push_back(write_family(family));
  std::printf("%-40s %8s %9s %9s %9s %9s\n", "file", "n_vocab", "parse_ms", "read_ms", "create_ms", "total_ms");
  for (const auto& path : files) time_file(path, rounds);
  return 0;
}
