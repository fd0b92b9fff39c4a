#!/usr/bin/env bash
# Equivalence on demand: trains ONE configuration of yours for a few steps in
# several layouts and rank counts, then prints, per canonical tensor, the relative error of the
# first step's gradients and of the last step's weights against the first layout, and the loss
# trajectories side by side — the numbers the equivalence tests assert, on your model.
#   scripts/compare.sh [optimus train flags]       e.g. scripts/compare.sh --layers 2 --embd 64 --heads 4 --seq 32 --batch 4
# Environment: LAYOUTS (default "serial 1d:2 2d:4"; LAYOUT:RANKS, the first is the reference),
# STEPS (default 5), OUT (default a temporary folder, removed afterwards unless set).
# Without --data it trains on the default corpus (scripts/prepare_corpus). Dropout, seed, lr and
# every other flag are yours; --steps, --out and checkpointing are the script's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${OPTIMUS_BUILD_DIR:-$root/build}
layouts=${LAYOUTS:-serial 1d:2 2d:4}
steps=${STEPS:-5}
args=("$@")
if [[ " ${args[*]} " != *" --data "* && " ${args[*]} " != *" --data="* ]]; then
  [[ -f $root/data/fortunes/train.txt ]] || "$root/scripts/prepare_corpus"
  args+=(--data "$root/data/fortunes/train.txt")
fi
if [[ -n ${OUT:-} ]]; then out=$OUT; mkdir -p "$out"; else out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

runs=()
for spec in $layouts; do
  layout=${spec%%:*} ranks=${spec#*:}
  [[ $spec == *:* ]] || ranks=1
  dir="$out/$layout-$ranks"
  rm -rf "$dir"
  echo "compare: training $steps steps in $layout on $ranks rank(s) -> $dir"
  launch=()
  if [[ $layout != serial ]]; then
    launch=(mpiexec -np "$ranks" --bind-to none -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1)
  fi
  if ! "${launch[@]}" "$build/optimus" train --layout "$layout" "${args[@]}" --steps "$steps" --out "$dir" \
      --checkpoint-interval 1 --keep 0 --save-gradients --eval-interval 0 --progress lines > "$dir.log" 2>&1; then
    echo "compare: the $layout run on $ranks rank(s) failed:" >&2
    tail -n 5 "$dir.log" >&2
    exit 1
  fi
  runs+=("$layout:$ranks=$dir")
done
/usr/bin/python3 "$root/scripts/compare_layouts.py" "$steps" "${runs[@]}"
