// Host buffer allocation: 64-byte aligned; from 2 MiB on mapped, huge pages
// advised and touched only where used (buffer.h).
#include "kernels/buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace tc::kernels {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// From 2 MiB on: fresh anonymous pages, 2 MiB aligned and advised into huge
// pages. The kernel zero-fills them on first touch, so a buffer sized for
// a whole batch holds memory only where it is used: the decode workspace
// (sized for a 512-token prompt) touches a row of each of its buffers, and
// filled with memset up front it had cost a 1B model about 50 MiB of peak
// RSS.
void* map_huge(size_t rounded) {
  void* m = ::mmap(nullptr, rounded + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<uintptr_t>(m);
  const uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > base) ::munmap(m, aligned - base);
  const uintptr_t tail = base + rounded + kHugePage - (aligned + rounded);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + rounded), tail);
  void* p = reinterpret_cast<void*>(aligned);
  ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: an error changes nothing
  return p;
}

// 64-byte aligned below 2 MiB (zeroed by memset when asked), map_huge from
// 2 MiB on (zero either way). Rounded up to the alignment.
Buffer allocate_host(size_t bytes, bool zero) {
  if (bytes >= kHugePage) {
    const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    return Buffer(map_huge(rounded), bytes, MemoryKind::Host, [rounded](void* q) { ::munmap(q, rounded); });
  }
  const size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (zero) std::memset(p, 0, rounded);
  return Buffer(p, bytes, MemoryKind::Host, [](void* q) { std::free(q); });
}

}  // namespace

Buffer Buffer::host(size_t bytes) { return allocate_host(bytes, true); }

Buffer Buffer::host_uninitialized(size_t bytes) { return allocate_host(bytes, false); }

}  // namespace tc::kernels
