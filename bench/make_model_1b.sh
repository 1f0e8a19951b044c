#!/usr/bin/env bash
# Times `thermocline make-model` writing a 1B-class model (n_embd 2048,
# 16 layers, n_ff 5504, 32 heads, 8 KV heads, vocab 32000) per weight type,
# R repeats each, and prints a markdown table of median and min/max seconds.
#   bench/make_model_1b.sh [BUILD_DIR] [REPEATS] [TYPES...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
repeats=${2:-3}
shift $(( $# > 2 ? 2 : $# )) || true
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(f32 f16 q8_0 q4_0)
bin=$build/cli/thermocline
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| type | file size | median s | min s | max s | threads |"
echo "| --- | --- | --- | --- | --- | --- |"
for t in "${types[@]}"; do
  times=()
  for ((r = 0; r < repeats; r++)); do
    start=$(date +%s.%N)
    "$bin" make-model -o "$out/m.gguf" --n-embd 2048 --n-layer 16 --n-ff 5504 --n-head 32 --n-head-kv 8 \
      --n-vocab 32000 --type "$t" --seed 1 -t "$(nproc)" 2>/dev/null
    end=$(date +%s.%N)
    times+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')")
  done
  size=$(du -h "$out/m.gguf" | cut -f1)
  rm -f "$out/m.gguf"
  sorted=$(printf '%s\n' "${times[@]}" | sort -g)
  median=$(echo "$sorted" | sed -n "$(( (repeats + 1) / 2 ))p")
  printf '| %s | %s | %.1f | %.1f | %.1f | %s |\n' "$t" "$size" "$median" "$(echo "$sorted" | head -1)" \
    "$(echo "$sorted" | tail -1)" "$(nproc)"
done
