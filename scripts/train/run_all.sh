#!/usr/bin/env bash
# The bundled model's whole pipeline: setup -> corpus -> tokenizer (checked
# against thermocline's /tokenize) -> train -> export GGUF -> evaluate
# (perplexity, sparsity, thermocline vs PyTorch) -> model card.
#   scripts/train/run_all.sh            full run (~1 hour on 2 cores): models/default.gguf,
#                                       models/default.md, models/default_loss.png
#   scripts/train/run_all.sh --quick    a few-minute smoke run into build-train/quick/ (models/ untouched)
# Extra arguments after -- go to train.py (e.g. -- --max-minutes 50 or -- --steps 600).
# Work files go to build-train/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/../.."

quick=0
train_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --) shift; train_args=("$@"); break ;;
    *) echo "run_all.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

PY=/usr/bin/python3   # Debian's, where python3-torch is installed
B=build-train
T=scripts/train

scripts/setup.sh --no-npm
$T/setup_train.sh

echo "== build thermocline"
[ -f $B/build.ninja ] || cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTHERMOCLINE_CUDA=OFF
cmake --build $B -j2 --target thermocline
THERMO=$B/cli/thermocline

if [ "$quick" -eq 1 ]; then
  RUN=$B/quick; GGUF=$RUN/model.gguf; CARD=$RUN/model_card.md; PNG=$RUN/loss_curve.png
  train_args=(--quick "${train_args[@]}")
else
  RUN=$B/run; GGUF=models/default.gguf; CARD=models/default.md; PNG=models/default_loss.png
fi

echo "== corpus"
$PY $T/prepare_corpus.py --out $B/corpus
echo "== tokenizer"
$PY $T/train_tokenizer.py --corpus $B/corpus --out $B/tokenizer.json --check --thermocline $THERMO
echo "== train"
$PY $T/train.py --corpus $B/corpus --tokenizer $B/tokenizer.json --out $RUN "${train_args[@]}"
echo "== export"
$PY $T/export_gguf.py --checkpoint $RUN/final.pt --tokenizer $B/tokenizer.json -o $GGUF
echo "== evaluate"
$PY $T/evaluate.py --run $RUN --gguf $GGUF --corpus $B/corpus --tokenizer $B/tokenizer.json --thermocline $THERMO
echo "== model card"
cmd="scripts/train/run_all.sh"
[ "$quick" -eq 1 ] && cmd="$cmd --quick"
[ "${#train_args[@]}" -gt 0 ] && cmd="$cmd -- ${train_args[*]}"
$PY $T/make_card.py --run $RUN --build $B --gguf $GGUF -o $CARD --png $PNG --command "$cmd"
echo "run_all: done: $GGUF, $CARD"
