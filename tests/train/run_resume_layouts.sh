#!/usr/bin/env bash
# L6 across layouts. Mode 2d: a 2D run on 4 ranks saved after 3 of 6 steps and resumed in 2D on
# 4 ranks continues bitwise identically (weights, AdamW moments, losses; dropout on); resumed in
# serial, in 1D on 2 ranks and in 3D on 8 it continues correctly: the losses of steps 4-6 and the
# final model's evaluation loss within 1e-5 (relative) of the straight 2D run.
# Mode memory (chapter 5): the same for a run of 1D with sequence parallelism and recomputation on
# 4 ranks, resumed in that layout (bitwise), in serial with recomputation and in 2D on 4 ranks;
# and the straight run without recomputation ends with the same bytes as the one with it.
# Mode 3d (chapter 7): the same for a 3D run on 8 ranks (q = 2), resumed in 3D (bitwise), in serial
# and in 2D on 4 ranks.
# Usage: run_resume_layouts.sh OPTIMUS MPIEXEC [2d|memory|3d]
set -euo pipefail
optimus=$1 mpiexec=$2 mode=${3:-2d}
source "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c "
import random
r = random.Random(6)
open('$tmp/text.txt', 'w').write(''.join(r.choice('abcdefgh ijk.\n') for _ in range(20000)))"

common=(--data "$tmp/text.txt" --steps 6 --batch 4 --seq 16 --layers 2 --embd 32 --heads 4 --dropout 0.1
        --warmup 2 --eval-interval 0 --eval-batches 2 --seed 11 --log-interval 1 --progress lines)
if [[ $mode == memory ]]; then
  name="1d+sp+recompute"
  layout=(-np 4 "$optimus" train --layout 1d --sequence-parallel --recompute block)
  others=(serial 2d)
  serial_memory=(--recompute block)
  "$mpiexec" -np 4 "$optimus" train --layout 1d --sequence-parallel "${common[@]}" --out "$tmp/kept"
elif [[ $mode == 3d ]]; then
  name="3d"
  serial_memory=()
  layout=(-np 8 "$optimus" train --layout 3d)
  others=(serial 2d)
else
  name="2d"
  serial_memory=()
  layout=(-np 4 "$optimus" train --layout 2d)
  others=(serial 1d 3d)
fi
"$mpiexec" "${layout[@]}" "${common[@]}" --checkpoint-interval 3 --keep 0 --out "$tmp/straight"
"$mpiexec" "${layout[@]}" "${common[@]}" --resume "$tmp/straight/step_000003" --out "$tmp/same"
for run in "${others[@]}"; do
  case $run in
    serial) "$optimus" train --layout serial "${serial_memory[@]}" "${common[@]}" \
              --resume "$tmp/straight/step_000003" --out "$tmp/serial" ;;
    1d) "$mpiexec" -np 2 "$optimus" train --layout 1d "${common[@]}" --resume "$tmp/straight/step_000003" \
          --out "$tmp/1d" ;;
    2d) "$mpiexec" -np 4 "$optimus" train --layout 2d "${common[@]}" --resume "$tmp/straight/step_000003" \
          --out "$tmp/2d" ;;
    3d) "$mpiexec" -np 8 "$optimus" train --layout 3d "${common[@]}" --resume "$tmp/straight/step_000003" \
          --out "$tmp/3d" ;;
  esac
done

identical "$name resumed in $name" "$tmp/straight/step_000006" "$tmp/same/step_000006"
if [[ $mode == memory ]]; then
  identical "1d+sp without recomputation vs with it" "$tmp/kept/step_000006" "$tmp/straight/step_000006"
fi
losses() { grep -o '"step": [4-6], "train_loss": [^,]*' "$1/metrics.jsonl"; }
if diff <(losses "$tmp/straight") <(losses "$tmp/same"); then
  echo "$name resumed in $name: identical losses of steps 4-6"
else
  echo "$name resumed in $name: DIFFERENT losses of steps 4-6"; status=1
fi
eval_loss() { "$optimus" eval --checkpoint "$1" --data "$tmp/text.txt" --batch 4 --seq 16 --batches 3 | awk '{print $2}'; }
ref=$(eval_loss "$tmp/straight/step_000006")
for run in "${others[@]}"; do
  got=$(eval_loss "$tmp/$run/step_000006")
  /usr/bin/python3 - "$name" "$run" "$tmp/straight/metrics.jsonl" "$tmp/$run/metrics.jsonl" "$got" "$ref" <<'PY' || status=1
import json, sys
name, run, a, b, got, ref = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6])
loss = lambda p: {m["step"]: m["train_loss"] for m in map(json.loads, open(p)) if "train_loss" in m}
la, lb = loss(a), loss(b)
worst = max(abs(lb[s] - la[s]) / abs(la[s]) for s in (4, 5, 6))
e = abs(got - ref) / abs(ref)
print(f"{name} resumed in {run}: worst loss difference of steps 4-6 {worst:.1e}; final model eval {got:.9g} vs "
      f"{ref:.9g} ({name} straight), relative {e:.1e}")
sys.exit(0 if worst <= 1e-5 and e <= 1e-5 else 1)
PY
done
exit $status
