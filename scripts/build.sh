#!/usr/bin/env bash
# Configures and builds Thermocline (Release) into build/ with Ninja.
# Extra arguments go to CMake, e.g. -DTHERMOCLINE_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${THERMOCLINE_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" -j "$(nproc)"
