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
script=compare
source "$root/scripts/script_args.sh"
args_whole STEPS "$steps" 1 10000
read -ra specs <<<"$layouts"
((${#specs[@]} >= 2)) || args_fail "LAYOUTS names ${#specs[@]} run(s); give two or more (the first is the reference), e.g. 'serial 1d:2'"
for spec in "${specs[@]}"; do
  [[ $spec =~ ^(serial|1d|2d|3d)(:[0-9]+)?$ ]] || args_fail "LAYOUTS: '$spec' is not LAYOUT:RANKS (LAYOUT serial, 1d, 2d or 3d)"
  [[ $spec != *:* ]] || args_whole "LAYOUTS: the ranks of '$spec'" "${spec#*:}" 1 1024
done
[[ -z ${OUT:-} ]] || args_output_folder OUT "$OUT"
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
