// CPUID reads behind cpu_features.h.
#include "kernels/cpu/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tc::kernels::detail {

bool cpu_has_f16c() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0 && __builtin_cpu_supports("avx");
  }();
  return has;
#else
  return false;
#endif
}

}  // namespace tc::kernels::detail
