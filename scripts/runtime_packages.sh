#!/usr/bin/env bash
# Prints the Debian/Ubuntu packages that provide the shared libraries an
# executable or shared library (the CUDA plugin) needs (from ldd, looked up
# with dpkg -S), one per line, sorted.
# The Docker images' runtime stage installs exactly these.
#   scripts/runtime_packages.sh build/cli/thermocline
# Fails, naming the library, when ldd cannot find one or no package owns it.
# A CUDA build's CUDA libraries (cuBLAS, from the toolkit under
# /usr/local/cuda*) are no Debian package's: they are skipped with a note on
# stderr, since the CUDA image's runtime stage (nvidia/cuda *-runtime)
# carries them.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 EXECUTABLE|LIBRARY.so" >&2; exit 2; }
exe=$1
# Debian's CMake installs shared libraries without the x bit: -r for those.
[ -x "$exe" ] || { [[ "$exe" == *.so ]] && [ -r "$exe" ]; } ||
  { echo "runtime_packages: $exe: not an executable or shared library" >&2; exit 2; }

# dpkg records a library under the path its package ships, which with merged
# /usr may be /lib/... or /usr/lib/..., before or after resolving symlinks.
owner_of() {
  local path=$1 real candidates c
  real=$(readlink -f "$path")
  candidates=("$path" "$real")
  for c in "$path" "$real"; do
    case "$c" in
      /usr/lib/*) candidates+=("${c#/usr}") ;;
      /lib/*) candidates+=("/usr$c") ;;
    esac
  done
  for c in "${candidates[@]}"; do
    if out=$(dpkg-query -S "$c" 2>/dev/null); then
      echo "${out%%:*}" | sed 's/,.*//'
      return 0
    fi
  done
  return 1
}

ldd_out=$(ldd "$exe")
if grep -q "not found" <<<"$ldd_out"; then
  echo "runtime_packages: $exe: missing libraries:" >&2
  grep "not found" <<<"$ldd_out" >&2
  exit 1
fi
packages=()
while read -r lib; do
  case "$(readlink -f "$lib")" in
    /usr/local/cuda*/*)
      echo "runtime_packages: $lib comes with the CUDA toolkit / nvidia/cuda runtime image, not a package" >&2
      continue
      ;;
  esac
  if ! pkg=$(owner_of "$lib"); then
    echo "runtime_packages: $exe: no installed package owns $lib" >&2
    exit 1
  fi
  packages+=("$pkg")
done < <(awk '/=> \// {print $3} /^\s*\/[^ ]+ \(/ {print $1}' <<<"$ldd_out")
printf '%s\n' "${packages[@]}" | sort -u
