#!/usr/bin/env bash
# The Docker images' runtime stage: installs the packages listed in
# PACKAGE_LIST (written by scripts/install.sh: those that own the libraries
# `ldd` names, nothing else), creates the non-root user and group
# `thermocline` (uid and gid 10001) and the /models volume directory it owns.
#   scripts/runtime_setup.sh /usr/local/share/thermocline/runtime-packages.txt
#   scripts/runtime_setup.sh --check LIST   only check that apt can install
#                                           every listed package (CI runs this)
set -euo pipefail
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
[ $# -eq 1 ] || { echo "usage: $0 [--check] PACKAGE_LIST" >&2; exit 2; }
mapfile -t packages < <(grep -v '^\s*$' "$1")
[ "${#packages[@]}" -gt 0 ] || { echo "runtime_setup: $1 lists no package" >&2; exit 1; }

if [ "$check" -eq 1 ]; then
  status=0
  for p in "${packages[@]}"; do
    candidate=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
    if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
      echo "runtime_setup: no installable package '$p'" >&2
      status=1
    fi
  done
  [ "$status" -eq 0 ] && echo "runtime_setup: ${#packages[@]} packages installable: ${packages[*]}"
  exit "$status"
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
groupadd --system --gid 10001 thermocline
useradd --system --uid 10001 --gid 10001 --create-home --shell /usr/sbin/nologin thermocline
mkdir -p /models
chown thermocline /models
