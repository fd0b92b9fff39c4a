#!/usr/bin/env bash
# Checkpoints cross layouts in 2D (chapter 3): a model made in serial, and one written by
# another GPT-2 implementation (the PyTorch reference's writer), evaluate in 2D on 4 and 9 ranks to
# the serial loss (the latter to the reference's own loss); a model trained 200 steps in 2D on 4
# ranks (dropout on) evaluates to the same loss in serial and in 1D, and so does one trained in 2D
# on 9 ranks in serial. Each relative difference ≤ 1e-5. The model (L=2, C=48, NH=6) fits q = 2 and 3; V = 256 is padded to 258 on 9 ranks.
# Usage: run_cross_layout_2d.sh OPTIMUS MPIEXEC
set -euo pipefail
optimus=$1 mpiexec=$2
source "$(dirname "$0")/lib.sh"
words "$tmp/text.txt" 5 8000 grid row col tile rank sum
eval_args=(--data "$tmp/text.txt" --batch 6 --seq 32 --batches 3)
model=(--layers 2 --embd 48 --heads 6 --seq 32)

"$optimus" init "${model[@]}" --seed 23 --out "$tmp/serial_init"
ref=$("$optimus" eval --checkpoint "$tmp/serial_init" "${eval_args[@]}")
for np in 4 9; do
  got=$("$mpiexec" -np $np "$optimus" eval --layout 2d --checkpoint "$tmp/serial_init" "${eval_args[@]}")
  same "serial checkpoint, 2d eval on $np ranks vs serial eval" "$got" "$ref"
done

# A checkpoint made elsewhere: random weights written by tests/reference/gpt_reference.py.
here=$(cd "$(dirname "$0")/.." && pwd)
/usr/bin/python3 - "$tmp/foreign" "$here/reference" <<'PY'
import sys, numpy as np
sys.path.insert(0, sys.argv[2])
import gpt_reference as g
cfg = dict(n_layer=2, n_embd=48, n_head=6, n_positions=32, vocab_size=256, layer_norm_epsilon=1e-5)
rng = np.random.default_rng(13)
g.write_checkpoint(sys.argv[1], cfg, {n: (rng.standard_normal(s) * 0.05).astype(np.float32)
                                      for n, s in g.parameter_shapes(cfg).items()})
PY
ref=$(/usr/bin/python3 "$here/reference/gpt_reference.py" eval --checkpoint "$tmp/foreign" "${eval_args[@]}")
for np in 4 9; do
  got=$("$mpiexec" -np $np "$optimus" eval --layout 2d --checkpoint "$tmp/foreign" "${eval_args[@]}")
  same "foreign checkpoint, 2d eval on $np ranks vs the PyTorch reference" "$got" "$ref"
done

# Trained in 2D on 4 ranks for 200 steps, evaluated in 2D, serial and 1D.
"$mpiexec" -np 4 "$optimus" train --layout 2d --data "$tmp/text.txt" --steps 200 --batch 4 "${model[@]}" \
  --dropout 0.1 --lr 3e-3 --eval-interval 100 --eval-batches 2 --log-interval 50 --out "$tmp/run2d"
ref=$("$mpiexec" -np 4 "$optimus" eval --layout 2d --checkpoint "$tmp/run2d/step_000200" "${eval_args[@]}")
got=$("$optimus" eval --checkpoint "$tmp/run2d/step_000200" "${eval_args[@]}")
same "2d-trained checkpoint (200 steps, 4 ranks), serial eval vs 2d eval" "$got" "$ref"
got=$("$mpiexec" -np 2 "$optimus" eval --layout 1d --checkpoint "$tmp/run2d/step_000200" "${eval_args[@]}")
same "2d-trained checkpoint (200 steps, 4 ranks), 1d eval on 2 ranks vs 2d eval" "$got" "$ref"

# Trained in 2D on 9 ranks (V padded), evaluated in serial.
"$mpiexec" -np 9 "$optimus" train --layout 2d --data "$tmp/text.txt" --steps 10 --batch 6 "${model[@]}" \
  --eval-batches 1 --log-interval 5 --out "$tmp/run2d9"
ref=$("$mpiexec" -np 9 "$optimus" eval --layout 2d --checkpoint "$tmp/run2d9/step_000010" "${eval_args[@]}")
got=$("$optimus" eval --checkpoint "$tmp/run2d9/step_000010" "${eval_args[@]}")
same "2d-trained checkpoint (9 ranks), serial eval vs 2d eval" "$got" "$ref"
exit $status
