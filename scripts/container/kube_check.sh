#!/usr/bin/env bash
# deploy/kubernetes/base under `podman kube play`: two replicas of IMAGE, one
# Deployment played per replica (podman 4.3 makes a pod per replica, but only
# the first one starts), published on
# 127.0.0.1:PORT and PORT+1. Both must answer a chat; then, with a stream
# running on each, replica a is killed (SIGKILL, as a lost node): its stream
# must be cut, b's must end with its final event, and b must keep answering.
# Run by scripts/container_check.sh.
#   scripts/container/kube_check.sh IMAGE PORT
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: $0 IMAGE PORT" >&2; exit 2; }
image=$1 port=$2
[ -n "${CONTAINERS_CONF:-}" ] || . scripts/container/podman_env.sh
work=${THERMOCLINE_CONTAINER_DIR:-/var/tmp/thermocline-containers}/kube
chat=scripts/container/chat.py
replicas=(tc-kube-a tc-kube-b)
fail() { echo "kube_check: FAIL: $*" >&2; exit 1; }
down() {
  local r
  for r in "${replicas[@]}"; do
    [ -f "$work/$r.yaml" ] && podman kube down "$work/$r.yaml" > /dev/null 2>&1 || true
    # The ConfigMap's volume outlives `kube down`; a stale one would hide edits.
    podman volume rm -f "$r-config" > /dev/null 2>&1 || true
  done
}
trap down EXIT
# The pod podman made for Deployment $1 (podman 4.3 names it $1-pod-0).
pod_of() { podman pod ps --format '{{.Name}}' --filter "name=^$1-pod" | head -1; }
mkdir -p "$work"
for i in 0 1; do
  scripts/container/kube_render.py "$PWD" "${replicas[$i]}" "$image" "$((port + i))" > "$work/${replicas[$i]}.yaml"
done
down
for r in "${replicas[@]}"; do
  podman kube play "$work/$r.yaml" > "$work/$r.play.log" 2>&1 || { cat "$work/$r.play.log" >&2; fail "podman kube play $r"; }
done

for i in 0 1; do
  r=${replicas[$i]} ok=0
  for t in $(seq 1 120); do
    curl -fsS "http://127.0.0.1:$((port + i))/health" > /dev/null 2>&1 && { ok=1; break; }
    sleep 1
  done
  pod=$(pod_of "$r")
  [ -n "$pod" ] || fail "podman kube play made no pod for $r"
  [ "$ok" = 1 ] || { podman pod logs "$pod" 2>&1 | tail -20 >&2; fail "$r not ready after 120 s"; }
  ctr=$(podman ps --filter "pod=$pod" --format '{{.Names}}' | grep -v -- '-infra$' | head -1)
  [ -n "$ctr" ] || fail "no container in pod $pod"
  uids=$(podman exec "$ctr" awk '/^Uid:/ {print $2}' /proc/1/status)
  [ "$uids" = 10001 ] || fail "$ctr runs as uid $uids, not 10001 (securityContext.runAsUser)"
  podman exec "$ctr" sh -c 'touch /probe 2>/dev/null' && fail "$ctr's root filesystem is writable (readOnlyRootFilesystem)"
  # configmap.yaml sets log_format = "json": JSON log lines show the server read it.
  podman logs "$ctr" > "$work/$r.log" 2>&1
  grep -q '^{"' "$work/$r.log" || fail "$ctr does not log JSON: the ConfigMap's serve.toml was not read"
  "$chat" chat "http://127.0.0.1:$((port + i))" || fail "$r does not answer"
  echo "kube_check: $r ($ctr) ready on 127.0.0.1:$((port + i)), uid 10001, read-only root, config from the ConfigMap"
done

# Both streams start together; b's triggers the kill of a after 5 chunks, so
# both are running when a dies.
"$chat" stream "http://127.0.0.1:$port" --max-tokens 220 --expect-broken > "$work/a.stream.log" 2>&1 &
stream_a=$!
"$chat" stream "http://127.0.0.1:$((port + 1))" --max-tokens 220 --after 5 \
  --run "podman pod kill --signal KILL $(pod_of "${replicas[0]}")" > "$work/b.stream.log" 2>&1 &
stream_b=$!
wait "$stream_b" || { cat "$work/b.stream.log" >&2; fail "replica b's stream did not finish while a was killed"; }
wait "$stream_a" || { cat "$work/a.stream.log" >&2; fail "replica a's stream was not cut by the kill"; }
cat "$work/a.stream.log" "$work/b.stream.log"
curl -fsS -m 5 "http://127.0.0.1:$port/health" > /dev/null 2>&1 && fail "replica a still answers after the kill"
"$chat" chat "http://127.0.0.1:$((port + 1))" || fail "replica b stopped answering after a was killed"
echo "kube_check: a killed mid-stream (its stream cut), b's stream finished and b keeps serving"
