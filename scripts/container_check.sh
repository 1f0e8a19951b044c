#!/usr/bin/env bash
# Builds docker/Dockerfile with podman and runs the image for real: health,
# a chat through the published port, the non-root user, a model served from a
# mounted folder, SIGTERM during a stream (clean exit, nothing lost), then the
# Kubernetes manifests under `podman kube play` (scripts/container/kube_check.sh).
# Run it before changing docker/, deploy/ or the install scripts, and record
# its summary in docs/operations.md. Needs root; slow (the image build
# compiles the project).
#   scripts/container_check.sh            everything
#   scripts/container_check.sh --no-build reuse the image of this source
#   scripts/container_check.sh --no-kube  skip the Kubernetes check
# THERMOCLINE_CONTAINER_DIR: podman's config, the base rootfs and scratch
# (default /var/tmp/thermocline-containers); THERMOCLINE_CHECK_PORT: the
# first of three host ports used, on 127.0.0.1 (default 18480).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

build=1 kube=1
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    --no-kube) kube=0 ;;
    *) echo "container_check: unknown option $arg" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "container_check: run as root (podman runs rootful here)" >&2; exit 2; }

. scripts/container/podman_env.sh
port=${THERMOCLINE_CHECK_PORT:-18480}
chat=scripts/container/chat.py
results=()
pass() { results+=("ok    $1"); echo "container_check: ok: $1"; }
die() {
  echo "container_check: FAIL: $*" >&2
  for r in "${results[@]}"; do echo "  $r" >&2; done
  exit 1
}

version=$(sed -n 's/^project(thermocline VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || die "no project version in CMakeLists.txt"
# The image is named after the last commit that changed what goes into it:
# the build context (the paths .dockerignore lets in), the Dockerfile and
# .dockerignore; "-dirty" when the work tree changes them. Commits to docs or
# tests keep the tag, so --no-build finds the image.
mapfile -t context < <(sed -n 's#^!\(.*\)#\1#p' .dockerignore)
[ "${#context[@]}" -gt 0 ] || die ".dockerignore allows nothing into the build context"
context+=(.dockerignore docker/Dockerfile)
revision=$(git log -1 --format=%H -- "${context[@]}")
[ -n "$revision" ] || die "no commit touches the build context"
tag="$version-g${revision:0:12}"
if ! git diff --quiet HEAD -- "${context[@]}" || [ -n "$(git ls-files --others --exclude-standard -- "${context[@]}")" ]; then
  tag="$tag-dirty"
fi
image="localhost/thermocline:$tag"

echo "== lint"
/usr/bin/python3 tests/docker/lint_docker.py "$repo" || die "tests/docker/lint_docker.py"
/usr/bin/python3 tests/docker/lint_kube.py "$repo" || die "tests/docker/lint_kube.py"
pass "lint: Dockerfiles, compose file, Kubernetes manifests"

echo "== build $image"
build_s=-
if [ "$build" -eq 1 ]; then
  start=$(date +%s)
  nice -n 10 podman build --format docker -f docker/Dockerfile \
    --build-arg VERSION="$version" --build-arg REVISION="$revision" \
    -t "$image" -t "localhost/thermocline:$version" . || die "podman build"
  build_s=$(( $(date +%s) - start ))
  pass "build: docker/Dockerfile in $build_s s"
else
  podman image exists "$image" || die "--no-build: no image $image (build it first)"
fi
size_b=$(podman image inspect --format '{{.Size}}' "$image")
size_mb=$(( size_b / 1000000 ))
[ "$size_mb" -lt 200 ] || die "image $image is $size_mb MB (the CPU image must stay under 200 MB)"
pass "size: $size_mb MB (under 200 MB)"
[ "$(podman image inspect --format '{{index .Labels "org.opencontainers.image.revision"}}' "$image")" = "$revision" ] ||
  die "label org.opencontainers.image.revision is not $revision"
health=$(podman image inspect --format '{{json .Config.Healthcheck}}' "$image")
[[ "$health" == */health* ]] ||
  die "the image has no HEALTHCHECK (built without --format docker?)"
pass "labels: version $version, revision ${revision:0:12}; HEALTHCHECK kept"

work="$container_dir/check"
names=(tc-check-bundled tc-check-models tc-check-make)
cleanup() { for n in "${names[@]}"; do podman rm -f -t 0 "$n" > /dev/null 2>&1 || true; done; }
trap cleanup EXIT
cleanup

# wait_healthy NAME PORT: the HEALTHCHECK and the published port both say
# ready. Containers run with --health-interval disable: podman schedules
# health checks with systemd timers, and without systemd the image's
# HEALTHCHECK is run here with `podman healthcheck run`.
wait_healthy() {
  local name=$1 p=$2 i
  for i in $(seq 1 120); do
    [ "$(podman inspect --format '{{.State.Running}}' "$name")" = true ] ||
      { podman logs "$name" | tail -20 >&2; die "$name exited before it was healthy"; }
    if podman healthcheck run "$name" > /dev/null 2>&1 && curl -fsS "http://127.0.0.1:$p/health" > /dev/null 2>&1; then
      return 0
    fi
    sleep 1
  done
  podman logs "$name" | tail -20 >&2
  die "$name not healthy after 120 s"
}

echo "== the bundled model"
podman run -d --name tc-check-bundled --health-interval disable -p "127.0.0.1:$port:8080" "$image" > /dev/null || die "podman run"
wait_healthy tc-check-bundled "$port"
[ "$(podman inspect --format '{{.State.Health.Status}}' tc-check-bundled)" = healthy ] ||
  die "podman reports tc-check-bundled as $(podman inspect --format '{{.State.Health.Status}}' tc-check-bundled)"
pass "health: HEALTHCHECK healthy, /health 200 through the published port"
"$chat" chat "http://127.0.0.1:$port" || die "chat with the bundled model"
pass "chat: /v1/chat/completions with the bundled model"
uids=$(podman exec tc-check-bundled awk '/^Uid:/ {print $2, $3, $4, $5}' /proc/1/status)
comm=$(podman exec tc-check-bundled cat /proc/1/comm)
[ "$uids" = "10001 10001 10001 10001" ] && [ "$comm" = thermocline ] ||
  die "PID 1 is $comm with uids $uids, not thermocline as 10001"
pass "user: thermocline runs as PID 1 with uid 10001 (real, effective, saved, fs)"
if podman exec tc-check-bundled ldd /usr/local/bin/thermocline | grep "not found"; then
  die "libraries missing in the runtime image"
fi
podman exec tc-check-bundled sh -c 'command -v curl gcc cmake' && die "the runtime image carries build tools or curl"
pass "runtime stage: every library ldd names resolves; no compiler, cmake or curl"
podman rm -f -t 15 tc-check-bundled > /dev/null

echo "== a model from a mounted folder"
rm -rf "$work" && mkdir -p "$work/models"
chown 10001:10001 "$work/models"
podman run --rm --name tc-check-make --health-interval disable --entrypoint thermocline -v "$work/models:/models" "$image" \
  make-model -o /models/check.gguf --seed 39 --n-embd 512 --n-layer 8 --n-ff 1536 --n-head 8 \
  --n-head-kv 4 --n-ctx 1024 --type q8_0 --name check > "$work/make-model.log" 2>&1 ||
  { cat "$work/make-model.log" >&2; die "thermocline make-model in the image"; }
podman run -d --name tc-check-models --health-interval disable -p "127.0.0.1:$((port + 1)):8080" -v "$work/models:/models:ro" \
  -e THERMOCLINE_MODEL=/models/check.gguf -e THERMOCLINE_SHUTDOWN_GRACE_S=60 "$image" > /dev/null || die "podman run"
wait_healthy tc-check-models "$((port + 1))"
"$chat" models "http://127.0.0.1:$((port + 1))" --expect check || die "/v1/models"
"$chat" chat "http://127.0.0.1:$((port + 1))" --model check || die "chat with /models/check.gguf"
pass "models volume: /models/check.gguf ($(du -m "$work/models/check.gguf" | cut -f1) MB, made by the image's make-model) served"

echo "== SIGTERM while a stream runs"
url="http://127.0.0.1:$((port + 1))"
"$chat" chat "$url" --model check --max-tokens 64 > "$work/concurrent.log" 2>&1 &
concurrent=$!
"$chat" stream "$url" --model check --max-tokens 400 --after 5 --run "podman stop -t 90 tc-check-models" \
  > "$work/stream.log" 2>&1 &
stream=$!
# While the stream finishes, new requests must be refused with 503.
refused=0
for i in $(seq 1 100); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "$url/health" || true)
  if [ "$code" = 503 ]; then
    code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
      -d '{"model":"check","messages":[{"role":"user","content":"hi"}]}' "$url/v1/chat/completions" || true)
    [ "$code" = 503 ] && refused=1
    break
  fi
  sleep 0.1
done
wait "$stream" || { cat "$work/stream.log" >&2; die "the stream did not finish across SIGTERM"; }
wait "$concurrent" || { cat "$work/concurrent.log" >&2; die "a request running at SIGTERM was lost"; }
cat "$work/stream.log"
podman wait tc-check-models > /dev/null 2>&1 || true
exit_code=$(podman inspect --format '{{.State.ExitCode}}' tc-check-models)
[ "$exit_code" = 0 ] || { podman logs tc-check-models | tail -20 >&2; die "exit status $exit_code after SIGTERM"; }
podman logs tc-check-models > "$work/models.log" 2>&1
grep -q "received SIGTERM" "$work/models.log" || die "no 'received SIGTERM' in the log ($work/models.log)"
[ "$refused" = 1 ] || die "no 503 for a new request while shutting down"
pass "SIGTERM: the running stream ended with finish_reason, usage and [DONE], a concurrent request got its 200, a new one 503, exit 0"

if [ "$kube" -eq 1 ]; then
  echo "== Kubernetes manifests under podman kube play"
  scripts/container/kube_check.sh "$image" "$((port + 2))" || die "scripts/container/kube_check.sh"
  pass "kube: two replicas from deploy/kubernetes answer; one killed mid-stream, the other keeps serving"
fi

echo "== summary ($(date -u +%Y-%m-%d), $image, podman $(podman version --format '{{.Client.Version}}'))"
echo "  image size $size_mb MB, build time ${build_s} s"
for r in "${results[@]}"; do echo "  $r"; done
