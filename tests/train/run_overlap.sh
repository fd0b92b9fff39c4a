#!/usr/bin/env bash
# --overlap moves only the waits: 2D's SUMMA starts each step's broadcasts during the step before,
# and data parallelism sums each block's gradients while the backward pass goes on. Training with it
# must write the same bits as without (dropout on, AdamW with clipping, 3 steps): 2D on 2×2 and on
# 3×3, and data parallelism of every layout — 4 × serial, 2 × 1D on 2 ranks with accumulation over
# 2 micro-batches, 2 × 2D on 2×2 (8 processes), 2 × 3D on 2×2×2 (16 processes) with accumulation.
# Usage: run_overlap.sh OPTIMUS MPIEXEC
set -euo pipefail
optimus=$1 mpiexec=$2
source "$(dirname "$0")/lib.sh"
words "$tmp/text.txt" 4 6000 tile grid row col sum rank copy
common=(--data "$tmp/text.txt" --steps 3 --seq 16 --layers 2 --embd 48 --heads 6 --dropout 0.1 --warmup 1
        --grad-clip 0.5 --eval-interval 0 --eval-batches 1 --seed 17 --log-interval 1 --progress lines)

# Runs NAME NP ARGS... twice, without and with --overlap, and compares the checkpoints bit for bit.
both() {
  local name=$1 np=$2
  shift 2
  "$mpiexec" -np "$np" "$optimus" train "${common[@]}" "$@" --out "$tmp/$name"
  "$mpiexec" -np "$np" "$optimus" train "${common[@]}" "$@" --overlap --out "$tmp/$name-overlap"
  identical "$name: --overlap vs without" "$tmp/$name/step_000003" "$tmp/$name-overlap/step_000003"
}
both 2d-q2 4 --layout 2d --batch 4
both 2d-q3 9 --layout 2d --batch 6
both dp4-serial 4 --data-parallel 4 --batch 8
both dp2-1d-accum2 4 --layout 1d --data-parallel 2 --grad-accum 2 --batch 8
both dp2-2d 8 --layout 2d --data-parallel 2 --batch 8
both dp2-3d-accum2 16 --layout 3d --data-parallel 2 --grad-accum 2 --batch 16
exit $status
