// Byte counts as `vram_budget` / --vram-budget take them ("12GiB", "1.5GiB",
// "800MiB", "8G", "8GB", "1000000"). Parsed here, in the leaf config library,
// so `serve`'s option table, the running subcommands and `place` validate
// them the same way. Pure function, thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace tc::config {

// Parses a byte count: a plain integer (bytes), or a number (digits with an
// optional fraction) followed by a unit, case-insensitive, optionally
// separated by one space:
//   B                 bytes
//   KiB MiB GiB TiB   powers of 1024
//   K   M   G   T     powers of 1024 too (the short forms of the above)
//   KB  MB  GB  TB    powers of 1000 (SI)
// Rule: a unit ending in "B" without an "i" is decimal; every other unit is
// binary. Fractions are rounded down to whole bytes; plain bytes must be a
// whole number. Throws std::invalid_argument naming the value for anything
// else (empty, negative, garbage, unknown unit, more than 2^63 - 1 bytes).
uint64_t parse_byte_size(std::string_view text);

}  // namespace tc::config
