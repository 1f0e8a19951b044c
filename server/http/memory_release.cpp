// tune_allocator and release_free_memory (see memory_release.h).
#include "server/http/memory_release.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tc::server::http {

void tune_allocator() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThresholdBytes));
  mallopt(M_ARENA_MAX, 4);
#endif
}

void release_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace tc::server::http
