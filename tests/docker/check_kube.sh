#!/usr/bin/env bash
# CTest `docker_kube_manifests`: the structural lint of deploy/kubernetes
# (tests/docker/lint_kube.py) and its self-test. `podman kube play` of the
# manifests runs in scripts/container_check.sh, not in CI.
#   tests/docker/check_kube.sh REPO_ROOT
set -euo pipefail
repo=$1
/usr/bin/python3 "$repo/tests/docker/lint_kube.py" --self-test "$repo"
/usr/bin/python3 "$repo/tests/docker/lint_kube.py" "$repo"
