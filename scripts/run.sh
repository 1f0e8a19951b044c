#!/usr/bin/env bash
# Sets up, builds and starts the server (the README's run command).
#   scripts/run.sh                  serve the bundled default model
#   scripts/run.sh -m FILE [flags]  serve FILE; flags go to `thermocline serve`
# Until the trained default model lands in models/default.gguf, the default is
# a small random-weight model generated here (it tokenizes but talks nonsense).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-npm
scripts/build.sh
bin=${THERMOCLINE_BUILD_DIR:-build}/cli/thermocline
has_model=0
for arg in "$@"; do
  case "$arg" in -m|--model|--model=*) has_model=1 ;; esac
done
if [ "$has_model" -eq 0 ] && [ ! -f models/default.gguf ]; then
  generated=models/generated/tiny-random.gguf
  if [ ! -f "$generated" ]; then
    mkdir -p models/generated
    "$bin" make-model -o "$generated" --n-embd 256 --n-layer 4 --n-ff 768 --n-head 8 --n-head-kv 4 \
      --n-vocab 4096 --type q8_0 --seed 1
  fi
  set -- --model "$generated" "$@"
fi
exec "$bin" serve "$@"
