#!/usr/bin/env bash
# L6: a run saved after 3 steps and resumed continues bitwise identically to a run
# that never stopped — weights, AdamW moments and the per-step losses (dropout on, so the masks
# keyed by step are exercised too) — and that a resume with another learning rate is refused.
# Usage: run_resume.sh OPTIMUS
set -euo pipefail
optimus=$1
source "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c "
import random
r = random.Random(5)
open('$tmp/text.txt', 'w').write(''.join(r.choice('abcdefgh ijk.\n') for _ in range(20000)))"

common=(--data "$tmp/text.txt" --steps 6 --batch 4 --seq 16 --layers 2 --embd 32 --heads 2 --dropout 0.1
        --warmup 2 --eval-interval 0 --eval-batches 2 --seed 9 --log-interval 1)
"$optimus" train "${common[@]}" --checkpoint-interval 3 --keep 0 --out "$tmp/straight"
"$optimus" train "${common[@]}" --resume "$tmp/straight/step_000003" --out "$tmp/resumed"

identical "resumed" "$tmp/straight/step_000006" "$tmp/resumed/step_000006"
# The training losses of steps 4..6, as logged by both runs (time fields removed).
losses() { grep -o '"step": [4-6], "train_loss": [^,]*' "$1/metrics.jsonl"; }
if diff <(losses "$tmp/straight") <(losses "$tmp/resumed"); then
  echo "identical losses of steps 4-6:"; losses "$tmp/resumed"
else
  echo "DIFFERENT losses of steps 4-6"; status=1
fi
# Resuming with a setting the continuation depends on changed is refused, naming the flag.
if msg=$("$optimus" train "${common[@]}" --lr 5e-3 --resume "$tmp/straight/step_000003" --out "$tmp/other" 2>&1); then
  echo "DIFFERENT settings were accepted on resume"; status=1
elif grep -q -- "--lr" <<<"$msg"; then
  echo "refused as expected: $(grep error <<<"$msg")"
else
  echo "refused, but without naming --lr: $msg"; status=1
fi
exit $status
