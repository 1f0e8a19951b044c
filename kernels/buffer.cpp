// Host buffer allocation: 64-byte aligned, huge pages from 2 MiB (buffer.h).
#include "kernels/buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace tc::kernels {

namespace {

// 64-byte aligned; from 2 MiB on, 2 MiB aligned and advised into huge pages
// before anything touches it. Rounded up to the alignment.
Buffer allocate_host(size_t bytes, bool zero) {
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t align = bytes >= kHugePage ? kHugePage : 64;
  const size_t rounded = bytes == 0 ? 64 : (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (align == kHugePage) ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: an error changes nothing
  if (zero) std::memset(p, 0, rounded);
  return Buffer(p, bytes, MemoryKind::Host, [](void* q) { std::free(q); });
}

}  // namespace

Buffer Buffer::host(size_t bytes) { return allocate_host(bytes, true); }

Buffer Buffer::host_uninitialized(size_t bytes) { return allocate_host(bytes, false); }

}  // namespace tc::kernels
