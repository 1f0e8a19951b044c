// Host buffer allocation.
#include "kernels/buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace tc::kernels {

Buffer Buffer::host(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return Buffer(p, bytes, MemoryKind::Host, [](void* q) { std::free(q); });
}

}  // namespace tc::kernels
