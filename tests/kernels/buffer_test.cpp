// Host buffers (kernels/buffer.h): zero-filled and 64-byte aligned; from 2
// MiB on 2 MiB aligned, and resident only where touched (mincore), so a
// workspace sized for a whole prompt costs a decode only the rows it uses.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "kernels/buffer.h"

using namespace tc::kernels;

namespace {

// How many of the pages of [p, p + bytes) are resident.
size_t resident_pages(const void* p, size_t bytes) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in(bytes / page);
  REQUIRE(::mincore(const_cast<void*>(p), bytes, in.data()) == 0);
  size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

}  // namespace

TEST_CASE("host buffers are zero-filled and aligned at every size", "[kernels][buffer]") {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{4096}, (size_t{2} << 20) - 1, size_t{2} << 20,
                       (size_t{5} << 20) + 3}) {
    for (bool zeroed : {true, false}) {
      Buffer b = zeroed ? Buffer::host(bytes) : Buffer::host_uninitialized(bytes);
      INFO("bytes " << bytes << (zeroed ? " host" : " host_uninitialized"));
      REQUIRE(b.size() == bytes);
      const auto addr = reinterpret_cast<uintptr_t>(b.data());
      REQUIRE(addr % 64 == 0);
      if (bytes >= (size_t{2} << 20)) REQUIRE(addr % (size_t{2} << 20) == 0);
      auto* p = static_cast<unsigned char*>(b.data());
      if (zeroed || bytes >= (size_t{2} << 20)) {
        size_t nonzero = 0;
        for (size_t i = 0; i < bytes; ++i) nonzero += p[i] != 0;
        REQUIRE(nonzero == 0);
      }
      for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(i);  // writable throughout
      size_t wrong = 0;
      for (size_t i = 0; i < bytes; ++i) wrong += p[i] != static_cast<unsigned char>(i);
      REQUIRE(wrong == 0);
    }
  }
}

TEST_CASE("a large host buffer holds memory only where it was touched", "[kernels][buffer]") {
  constexpr size_t kBytes = size_t{64} << 20;
  Buffer b = Buffer::host(kBytes);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  // Nothing touched yet: at most a huge page's worth may be resident.
  REQUIRE(resident_pages(b.data(), kBytes) * page <= (size_t{2} << 20));
  // One byte in each of the first 3 MiB's pages: at most 4 MiB (two huge
  // pages) resident of the 64.
  auto* p = static_cast<unsigned char*>(b.data());
  for (size_t i = 0; i < (size_t{3} << 20); i += page) p[i] = 1;
  const size_t resident = resident_pages(b.data(), kBytes) * page;
  REQUIRE(resident >= (size_t{3} << 20));
  REQUIRE(resident <= (size_t{4} << 20));
}
