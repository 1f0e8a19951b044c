#!/usr/bin/env bash
# Sets up, builds and starts the server (the README's run command).
#   scripts/run.sh                  serve the bundled model (models/default.gguf)
#   scripts/run.sh -m FILE [flags]  serve FILE; flags go to `thermocline serve`
# The server prints its address at once and a curl line to try once the
# model is loaded.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-npm
THERMOCLINE_TARGET=thermocline scripts/build.sh   # the server only; scripts/test.sh builds the rest
exec "${THERMOCLINE_BUILD_DIR:-build}/cli/thermocline" serve "$@"
