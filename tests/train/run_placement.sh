#!/usr/bin/env bash
# --placement moves grid positions between ranks, never the work of a position: training with the
# ranks placed otherwise must write the same bits as the default order (dropout on, AdamW with
# clipping, 3 steps). 2d: on 2×2 in blocks of 1×2 and 2×1 (two 2-rank nodes); 2 data-parallel copies
# of a 2×2 grid in 2×1 blocks (8 processes); and on 4×4 in the Optimus code's 2×2 blocks (16
# processes), each against row-major. 3d: the q = 2 cube (8 processes) with its row lines and with
# its column lines on consecutive ranks, each against depth (the default order).
# Usage: run_placement.sh OPTIMUS MPIEXEC [2d|3d]        (default 2d)
set -euo pipefail
optimus=$1 mpiexec=$2 layout=${3:-2d}
source "$(dirname "$0")/lib.sh"
words "$tmp/text.txt" 4 6000 tile grid row col node block rank copy cube line depth
common=(--data "$tmp/text.txt" --steps 3 --seq 16 --layers 2 --dropout 0.1 --warmup 1 --grad-clip 0.5
        --eval-interval 0 --eval-batches 1 --seed 17 --log-interval 1 --progress lines --layout "$layout")

# Runs NAME NP ARGS... with --placement FIRST and with each of the others of "FIRST OTHERS...",
# comparing the checkpoints bit for bit.
placements() {
  local name=$1 np=$2 first=${3%% *} others=${3#* }
  shift 3
  "$mpiexec" -np "$np" "$optimus" train "${common[@]}" "$@" --placement "$first" --out "$tmp/$name"
  for p in $others; do
    "$mpiexec" -np "$np" "$optimus" train "${common[@]}" "$@" --placement "$p" --out "$tmp/$name-$p"
    identical "$name: --placement $p vs $first" "$tmp/$name/step_000003" "$tmp/$name-$p/step_000003"
  done
}
case $layout in
  2d)
    placements q2 4 "row-major 1x2 2x1" --embd 48 --heads 6 --batch 4
    placements dp2-q2 8 "row-major 2x1" --embd 48 --heads 6 --batch 8 --data-parallel 2
    placements q4 16 "row-major 2x2" --embd 32 --heads 4 --batch 4
    ;;
  3d)
    placements cube-q2 8 "depth row col" --embd 48 --heads 6 --batch 4
    ;;
  *)
    echo "run_placement.sh: give 2d or 3d, not '$layout'" >&2
    exit 2
    ;;
esac
exit $status
