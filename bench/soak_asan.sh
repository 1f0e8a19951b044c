#!/usr/bin/env bash
# The soak of bench/serve_load.sh against an AddressSanitizer build:
# configures BUILD_DIR (default build-asan) with -DTHERMOCLINE_SANITIZE=ON
# (AddressSanitizer + UBSan, LeakSanitizer on at exit), RelWithDebInfo for
# readable stacks, builds `thermocline` and `serve_load` there, then runs the
# soak (a tiny model, `serve --parallel 8`, 8 clients, chat and completions,
# streamed or not, 30% dropped mid-stream by the client) and stops the server
# with SIGTERM so that LeakSanitizer runs at its exit.
#
# Fails (exit 1) when the soak fails (an error on a request that was not
# dropped, the server not idle afterwards, a non-zero exit status) or when
# the server's log (its stderr) holds "ERROR: AddressSanitizer",
# "ERROR: LeakSanitizer" or a UBSan "runtime error:". RSS is reported, not
# checked: ASan's quarantine keeps up to 256 MB of freed memory, so RSS grows
# by design (the release soak of bench/serve_load.sh checks it). The default
# is the release soak's 2000 requests after 200 warm-up ones (about 45 s
# under ASan on 2 cores); --soak-requests lowers it on slower machines.
#
#   bench/soak_asan.sh [-b BUILD_DIR] [--soak-requests N] [--soak-warmup N] [--work DIR] [--no-build]
#   defaults: build-asan, 2000, 200, BUILD_DIR/soak-asan
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-asan
soak_n=2000
soak_warmup=200
work=
do_build=1
usage() { sed -n '/^#   bench/,/^#   defaults/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -b) build=$2; shift 2 ;;
    --soak-requests) soak_n=$2; shift 2 ;;
    --soak-warmup) soak_warmup=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) usage ;;
    *) echo "soak_asan.sh: unknown option $1" >&2; usage ;;
  esac
done
[ -n "$work" ] || work=$build/soak-asan

if [ "$do_build" -eq 1 ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTHERMOCLINE_SANITIZE=ON \
    -DTHERMOCLINE_CUDA=OFF -DTHERMOCLINE_TESTS=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target thermocline serve_load
fi

rm -rf "$work"
mkdir -p "$work"
# Report every error (not only the first) with its stack; leaks at exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=0:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=0}

rc=0
bench/serve_load.sh -b "$build" --only soak --soak-requests "$soak_n" --soak-warmup "$soak_warmup" \
  --rss-limit-mb 0 --work "$work" || rc=$?

log=$work/serve-soak.log
if [ ! -s "$log" ]; then
  echo "soak_asan.sh: no server log at $log" >&2
  exit 1
fi
reports=$(grep -cE "ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:" "$log" || true)
echo
echo "| sanitizer check | result |"
echo "| --- | --- |"
echo "| AddressSanitizer / LeakSanitizer / UBSan reports in the server log | $reports |"
echo "| soak (bench/serve_load.sh --only soak) exit status | $rc |"
if [ "$reports" -ne 0 ]; then
  echo "soak_asan.sh: sanitizer reports in $log:" >&2
  grep -nE -A 30 "ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:" "$log" | head -120 >&2
  exit 1
fi
[ "$rc" -eq 0 ] || { echo "soak_asan.sh: the soak failed (exit $rc)" >&2; exit 1; }
echo "soak_asan.sh: clean ($soak_n requests after $soak_warmup warm-up, log $log)"
