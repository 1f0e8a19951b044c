// Malformed GGUF files: the committed corpus matches its generator and every
// case fails with a ModelLoadError naming the file, the item and the problem;
// every truncation and many byte mutations of a valid file fail cleanly.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <set>

#include "engine/gguf/gguf_file.h"
#include "tests/engine/gguf/gguf_test_files.h"
#include "tests/test_util.h"

namespace {

using tc::gguf::GgufFile;
using tc::gguf::ModelLoadError;
using namespace tc::test::gguf;

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// The message of the ModelLoadError that parsing `bytes` throws; fails the
// test when it parses or throws anything else.
std::string load_error(const std::string& bytes, const std::string& name) {
  try {
    GgufFile::from_bytes(as_bytes(bytes), name);
  } catch (const ModelLoadError& e) {
    return e.what();
  }
  FAIL("parsed without error: " << name);
  return {};
}

bool regenerate() {
  const char* env = std::getenv("THERMOCLINE_REGENERATE_CORPUS");
  return env != nullptr && std::strcmp(env, "1") == 0;
}

}  // namespace

TEST_CASE("the base file of the malformed corpus is valid", "[gguf][malformed]") {
  const std::string base = base_file_bytes();
  CHECK(base.size() < 4096);
  const auto f = GgufFile::from_bytes(as_bytes(base), "base.gguf");
  CHECK(f.alignment() == kBaseAlignment);
  REQUIRE(f.tensors().size() == 2);
  const auto& b = f.tensor(kTensorB, {16, 4});
  // The last tensor ends exactly at the end of the file, so that every proper
  // prefix is truncated (the prefix test below relies on it).
  CHECK(f.data_offset() + b.offset + b.n_bytes == base.size());
  // data_section_missing cuts at the header end; it must not be aligned.
  CHECK(base_header_end(base) % kBaseAlignment != 0);
  CHECK(f.data_offset() > base_header_end(base));
}

TEST_CASE("malformed corpus files equal their generator output", "[gguf][malformed]") {
  const std::string base = base_file_bytes();
  const auto dir = malformed_corpus_dir();
  for (const auto& c : malformed_cases()) {
    SECTION(c.name) {
      const std::string bytes = c.make(base);
      CHECK(bytes != base);
      CHECK(bytes.size() < 4096);
      const auto path = dir / (c.name + ".gguf");
      if (regenerate()) tc::test::write_file(path, bytes);
      REQUIRE(std::filesystem::exists(path));
      CHECK(tc::test::read_file(path) == bytes);
    }
  }
}

TEST_CASE("the malformed corpus has no stray files and a README for every case",
          "[gguf][malformed]") {
  const auto dir = malformed_corpus_dir();
  std::set<std::string> expected_files;
  for (const auto& c : malformed_cases()) expected_files.insert(c.name + ".gguf");
  CHECK(expected_files.size() == malformed_cases().size());  // unique case names
  size_t n_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".gguf") {
      INFO(entry.path());
      CHECK(expected_files.count(entry.path().filename().string()) == 1);
      ++n_files;
    }
  }
  CHECK(n_files == expected_files.size());
  const std::string readme = tc::test::read_file(dir / "README.md");
  for (const auto& c : malformed_cases()) {
    INFO(c.name);
    CHECK(readme.find("`" + c.name + ".gguf`") != std::string::npos);
  }
}

TEST_CASE("each malformed corpus file fails with a precise ModelLoadError", "[gguf][malformed]") {
  const auto dir = malformed_corpus_dir();
  for (const auto& c : malformed_cases()) {
    SECTION(c.name) {
      const auto path = dir / (c.name + ".gguf");
      try {
        GgufFile::open(path);
        FAIL("opened without error");
      } catch (const ModelLoadError& e) {
        const std::string msg = e.what();
        INFO(msg);
        CHECK(msg.rfind(path.string() + ": ", 0) == 0);
        CHECK(msg.find(c.name + ".gguf") != std::string::npos);
        CHECK(e.file() == path.string());
        CHECK(e.item() == c.item_name);
        if (!c.item.empty()) CHECK(msg.find(": " + c.item + ": ") != std::string::npos);
        for (const auto& w : c.words) CHECK(msg.find(w) != std::string::npos);
      }
    }
  }
}

TEST_CASE("every proper prefix of a valid file is rejected", "[gguf][malformed]") {
  const std::string base = base_file_bytes();
  REQUIRE_NOTHROW(GgufFile::from_bytes(as_bytes(base), "base.gguf"));
  size_t n_truncated_messages = 0;
  for (size_t n = 0; n < base.size(); ++n) {
    const std::string msg = load_error(base.substr(0, n), "prefix.gguf");
    INFO("prefix length " << n << ": " << msg);
    CHECK(msg.rfind("prefix.gguf: ", 0) == 0);
    const bool says_truncated = msg.find("truncated") != std::string::npos ||
                                msg.find("past the end") != std::string::npos ||
                                msg.find("impossible") != std::string::npos ||
                                msg.find("empty") != std::string::npos;
    CHECK(says_truncated);
    n_truncated_messages += says_truncated ? 1 : 0;
  }
  CHECK(n_truncated_messages == base.size());
}

TEST_CASE("byte mutations of a valid header parse or fail with ModelLoadError only",
          "[gguf][malformed]") {
  const std::string base = base_file_bytes();
  const size_t header_end = base_header_end(base);
  size_t n_rejected = 0, n_parsed = 0;
  for (size_t pos = 0; pos < header_end; ++pos) {
    for (unsigned char v : {0x00, 0x01, 0x07, 0x80, 0xff}) {
      std::string m = base;
      if (static_cast<unsigned char>(m[pos]) == v) continue;
      m[pos] = static_cast<char>(v);
      try {
        const auto f = GgufFile::from_bytes(as_bytes(m), "mutant.gguf");
        for (const auto& t : f.tensors()) {
          const auto data = f.tensor_data(t);
          CHECK(data.size() == t.n_bytes);
        }
        for (const auto& [key, value] : f.metadata()) CHECK(!value.to_display_string().empty());
        ++n_parsed;
      } catch (const ModelLoadError& e) {
        CHECK(std::string(e.what()).rfind("mutant.gguf: ", 0) == 0);
        ++n_rejected;
      }
    }
  }
  // Both outcomes occur: mutated names/values still parse, framing breaks.
  CHECK(n_rejected > 100);
  CHECK(n_parsed > 100);
}

TEST_CASE("huge counts are rejected before any allocation", "[gguf][malformed]") {
  // 2^63 metadata entries / tensors / array elements in a tiny file: the
  // reader must bound them by the bytes left rather than reserving memory.
  const std::string base = base_file_bytes();
  int n_checked = 0;
  for (const auto* name : {"kv_count_huge", "tensor_count_huge", "array_past_end"}) {
    for (const auto& c : malformed_cases()) {
      if (c.name != name) continue;
      const std::string msg = load_error(c.make(base), c.name);
      CHECK((msg.find("impossible") != std::string::npos ||
             msg.find("past the end") != std::string::npos));
      ++n_checked;
    }
  }
  CHECK(n_checked == 3);
}
