#!/usr/bin/env bash
# Configures and builds Thermocline (Release) into build/ with Ninja.
# Extra arguments go to CMake, e.g. -DTHERMOCLINE_CUDA=OFF.
#   THERMOCLINE_BUILD_DIR   the build folder (default build/)
#   THERMOCLINE_TARGET      one target to build (default: all, tests included)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${THERMOCLINE_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
target_args=()
[ -n "${THERMOCLINE_TARGET:-}" ] && target_args=(--target "$THERMOCLINE_TARGET")
cmake --build "$build_dir" -j "$(nproc)" "${target_args[@]}"
