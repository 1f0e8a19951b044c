#!/usr/bin/env bash
# Installs what the bundled-model training pipeline (scripts/train/) needs on
# Debian 12, from Debian packages only: PyTorch (CPU), NumPy and Matplotlib
# for training, export and the model card's plot, and the King James Bible
# text (bible-kjv, public domain) as the corpus. Works as root or through
# sudo; safe to run any number of times. The C++ build dependencies come from
# scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi

# libopenblas0-openmp: python3-torch only *recommends* an optimised BLAS;
# with --no-install-recommends its matrix products fall back to the
# reference libblas3, about 20x slower (2.7 GFLOPS on 2 cores). The OpenMP
# build of OpenBLAS matches PyTorch's own OpenMP threading.
packages=(
  python3 python3-torch python3-numpy python3-matplotlib libopenblas0-openmp
  bible-kjv bible-kjv-text
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup_train: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup_train: Debian packages already installed"
fi
# Debian's python3 (python3-torch installs into /usr/lib/python3/dist-packages,
# which another python3 earlier on PATH may not see).
/usr/bin/python3 -c 'import torch, numpy, matplotlib; print("setup_train: torch", torch.__version__, "numpy", numpy.__version__, "matplotlib", matplotlib.__version__)'
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
echo "setup_train: BLAS $blas"
case "$blas" in
  *openblas*) ;;
  *) echo "setup_train: warning: libblas.so.3 is not OpenBLAS; training will be very slow" >&2 ;;
esac
echo "setup_train: done"
