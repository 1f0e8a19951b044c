#!/usr/bin/env bash
# Sets up, builds and runs the default test suite (the README's test command;
# .ci/run calls it). Extra arguments go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh "$@"
build_dir=${THERMOCLINE_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
