#!/usr/bin/env bash
# --placement moves grid positions between ranks, never the work of a position: training with the
# ranks in r×c blocks must write the same bits as row-major (dropout on, AdamW with clipping, 3
# steps). 2D on 2×2 in blocks of 1×2 and 2×1 (two 2-rank nodes); 2 data-parallel copies of a 2×2
# grid in 2×1 blocks (8 processes); and 2D on 4×4 in the Optimus code's 2×2 blocks (16 processes).
# Usage: run_placement.sh OPTIMUS MPIEXEC
set -euo pipefail
optimus=$1 mpiexec=$2
source "$(dirname "$0")/lib.sh"
words "$tmp/text.txt" 4 6000 tile grid row col node block rank copy
common=(--data "$tmp/text.txt" --steps 3 --seq 16 --layers 2 --dropout 0.1 --warmup 1 --grad-clip 0.5
        --eval-interval 0 --eval-batches 1 --seed 17 --log-interval 1 --progress lines --layout 2d)

# Runs NAME NP ARGS... with --placement row-major and with each of PLACEMENTS, comparing the
# checkpoints bit for bit.
placements() {
  local name=$1 np=$2 list=$3
  shift 3
  "$mpiexec" -np "$np" "$optimus" train "${common[@]}" "$@" --placement row-major --out "$tmp/$name"
  for p in $list; do
    "$mpiexec" -np "$np" "$optimus" train "${common[@]}" "$@" --placement "$p" --out "$tmp/$name-$p"
    identical "$name: --placement $p vs row-major" "$tmp/$name/step_000003" "$tmp/$name-$p/step_000003"
  done
}
placements q2 4 "1x2 2x1" --embd 48 --heads 6 --batch 4
placements dp2-q2 8 "2x1" --embd 48 --heads 6 --batch 8 --data-parallel 2
placements q4 16 "2x2" --embd 32 --heads 4 --batch 4
exit $status
