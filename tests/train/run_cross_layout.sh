#!/usr/bin/env bash
# Checkpoints cross layouts (chapter 2): a model made in serial, and one written by
# another GPT-2 implementation (the PyTorch reference's writer), evaluate to the same loss in 1D on
# 2 and 4 ranks as in serial (the latter against the reference's own loss), and a model trained in
# 1D on 2 ranks evaluates to the same loss in serial (relative difference ≤ 1e-5 each).
# Usage: run_cross_layout.sh OPTIMUS MPIEXEC
set -euo pipefail
optimus=$1 mpiexec=$2
source "$(dirname "$0")/lib.sh"
words "$tmp/text.txt" 3 6000 grid row col sum rank
eval_args=(--data "$tmp/text.txt" --batch 4 --seq 32 --batches 4)

"$optimus" init --layers 2 --embd 64 --heads 4 --seq 32 --seed 21 --out "$tmp/serial_init"
ref=$("$optimus" eval --checkpoint "$tmp/serial_init" "${eval_args[@]}")
for np in 2 4; do
  got=$("$mpiexec" -np $np "$optimus" eval --layout 1d --checkpoint "$tmp/serial_init" "${eval_args[@]}")
  same "serial checkpoint, 1d eval on $np ranks" "$got" "$ref"
done

# A checkpoint made elsewhere: random weights written by tests/reference/gpt_reference.py.
here=$(cd "$(dirname "$0")/.." && pwd)
/usr/bin/python3 - "$tmp/foreign" "$here/reference" <<'PY'
import sys, numpy as np
sys.path.insert(0, sys.argv[2])
import gpt_reference as g
cfg = dict(n_layer=2, n_embd=64, n_head=4, n_positions=32, vocab_size=256, layer_norm_epsilon=1e-5)
rng = np.random.default_rng(11)
g.write_checkpoint(sys.argv[1], cfg, {n: (rng.standard_normal(s) * 0.05).astype(np.float32)
                                      for n, s in g.parameter_shapes(cfg).items()})
PY
ref=$(/usr/bin/python3 "$here/reference/gpt_reference.py" eval --checkpoint "$tmp/foreign" "${eval_args[@]}")
for np in 2 4; do
  got=$("$mpiexec" -np $np "$optimus" eval --layout 1d --checkpoint "$tmp/foreign" "${eval_args[@]}")
  same "foreign checkpoint, 1d eval on $np ranks vs the PyTorch reference" "$got" "$ref"
done

"$mpiexec" -np 2 "$optimus" train --layout 1d --data "$tmp/text.txt" --steps 10 --batch 4 --seq 32 --layers 2 \
  --embd 64 --heads 4 --dropout 0.1 --eval-batches 2 --log-interval 5 --out "$tmp/run1d"
got=$("$optimus" eval --checkpoint "$tmp/run1d/step_000010" "${eval_args[@]}")
ref=$("$mpiexec" -np 2 "$optimus" eval --layout 1d --checkpoint "$tmp/run1d/step_000010" "${eval_args[@]}")
same "1d-trained checkpoint, serial eval vs 1d eval" "$got" "$ref"
exit $status
