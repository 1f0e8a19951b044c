#!/usr/bin/env bash
# CTest `readme_run_command`: the README's run command, as a new user runs
# it. scripts/run.sh (setup, build, serve with no --model) must start the
# bundled model and print a `try: curl ...` line when ready; that exact line,
# run as printed, must get a chat completion with text; SIGTERM must stop the
# server with exit status 0. The answer is sampled (temperature 1, no seed), so
# its length varies: of 1,500 answers to the printed verse prompt the median
# had 127 letters and 2 had fewer than 10 (one had 4), none had none; the
# check is that text came back, not how much (the model's quality is tested
# by tests/integration/default_model_test.cpp).
#   tests/integration/readme_run_test.sh REPO_ROOT BUILD_DIR
set -euo pipefail
repo=$1
export THERMOCLINE_BUILD_DIR=$2   # CI's build: run.sh's build step is then a no-op
log=$(mktemp)
"$repo/scripts/run.sh" --port 0 > "$log" 2>&1 &
pid=$!
cleanup() { kill -9 "$pid" 2>/dev/null || true; rm -f "$log"; }
trap cleanup EXIT

line=""
for _ in $(seq 600); do   # up to 60 s after setup and the (no-op) build
  line=$(grep -m1 '^try: curl ' "$log" || true)
  [ -n "$line" ] && break
  kill -0 "$pid" 2>/dev/null || { echo "readme_run: scripts/run.sh exited:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$line" ] || { echo "readme_run: no 'try: curl' line within 60 s:" >&2; cat "$log" >&2; exit 1; }
grep -q "loading .*models/default.gguf" "$log" || { echo "readme_run: did not load the bundled model:" >&2; cat "$log" >&2; exit 1; }

reply=$(bash -c "${line#try: } -fsS")
echo "readme_run: $reply"
/usr/bin/python3 - "$reply" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
text = r["choices"][0]["message"]["content"]
assert r["object"] == "chat.completion", r
assert r["usage"]["completion_tokens"] >= 1, r
assert any(c.isalpha() for c in text), "no text in the answer: %r" % text
PY
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[ "$status" -eq 0 ] || { echo "readme_run: exit status $status after SIGTERM:" >&2; cat "$log" >&2; exit 1; }
echo "readme_run: ok"
