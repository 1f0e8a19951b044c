// Giving request memory back to the system. glibc keeps freed heap memory
// in its arenas (one per thread in contention, up to 8 per core) and raises
// its mmap threshold each time a large block is freed, after which large
// request buffers come from those arenas too: after a few hundred
// megabytes of bodies and JSON trees the server's RSS stayed that high.
#pragma once

#include <cstddef>

namespace tc::server::http {

// A request whose body was at least this large is followed by release_free_memory().
inline constexpr size_t kReleaseAfterBodyBytes = 256 << 10;
// Blocks this large or larger are mapped, and unmapped when freed.
inline constexpr size_t kMmapThresholdBytes = 4 << 20;

// Once at start: a fixed mmap threshold (glibc's own rises to 32 MiB as
// large blocks are freed) and at most 4 malloc arenas. No-op outside glibc.
void tune_allocator();

// Returns the free pages of every arena to the system (malloc_trim).
void release_free_memory();

}  // namespace tc::server::http
