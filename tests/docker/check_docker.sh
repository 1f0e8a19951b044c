#!/usr/bin/env bash
# CTest `docker_steps`: what CI can prove about docker/ without a Docker
# engine. The build stage's scripts/install.sh is run on CI's build by
# tests/integration/default_model_test.cpp; here: the linter (and its
# self-test), and the runtime stage's package list: computed from the built
# binary by scripts/runtime_packages.sh, every package installable by apt
# (scripts/runtime_setup.sh --check).
#   tests/docker/check_docker.sh REPO_ROOT THERMOCLINE_BINARY
set -euo pipefail
repo=$1
binary=$2
python=/usr/bin/python3
"$python" "$repo/tests/docker/lint_docker.py" --self-test
"$python" "$repo/tests/docker/lint_docker.py" "$repo"
list=$(mktemp)
trap 'rm -f "$list"' EXIT
"$repo/scripts/runtime_packages.sh" "$binary" > "$list"
grep -q '^libcpp-httplib' "$list" || { echo "check_docker: runtime packages lack cpp-httplib's library:" >&2; cat "$list" >&2; exit 1; }
"$repo/scripts/runtime_setup.sh" --check "$list"
