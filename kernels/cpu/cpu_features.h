// CPU features read once from CPUID where __builtin_cpu_supports cannot
// name them (clang before 16 knows no "f16c").
#pragma once

namespace tc::kernels::detail {

// F16C (f16 <-> f32 conversions) with AVX usable: false off x86.
bool cpu_has_f16c();

}  // namespace tc::kernels::detail
