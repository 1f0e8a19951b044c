// The profiler suite does not compile tests/engine/model/: the float64
// reference pass (reference_forward.h) is built into its binary here, once.
#include "tests/engine/model/reference_forward.cpp"  // NOLINT(bugprone-suspicious-include)
