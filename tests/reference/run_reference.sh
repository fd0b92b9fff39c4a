#!/usr/bin/env bash
# ctest driver of the PyTorch reference checks (label reference). Makes its own data and
# checkpoints in a temporary folder:
#   compare     optimus init → dump_serial (logits, loss, gradients, 5 AdamW steps) → gpt_reference.py compare
#   eval        optimus eval and gpt_reference.py eval on the same checkpoint and windows agree (≤ 1e-5)
#   foreign     a checkpoint written by the Python implementation: optimus eval equals its loss
#   epsilon     the same with layer_norm_epsilon = 0.5 in its config.json: optimus eval in serial,
#               in 1D on 2 ranks and in 2D on 4 ranks equals the reference's loss (the epsilon is
#               read from the checkpoint, not assumed to be GPT-2's 1e-5)
# Usage: run_reference.sh MODE OPTIMUS DUMP_SERIAL [MPIEXEC]
set -euo pipefail
mode=$1 optimus=$2 dump=$3 mpiexec=${4:-mpiexec}
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
ref="$py $here/gpt_reference.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Test text: 40 000 pseudo-random printable bytes, the same every run.
$py -c "
import random
r = random.Random(7)
words = ['the', 'tensor', 'grid', 'of', 'ranks', 'sums', 'a', 'block', 'row', 'column', 'and', 'broadcast']
text = ' '.join(r.choice(words) + ('.\n' if r.random() < 0.1 else '') for _ in range(8000))
open('$tmp/text.txt', 'w').write(text)
"

# |a - b| / |b| <= 1e-5 for two "loss <value>" lines.
same_loss() {
  $py - "$1" "$2" <<'PY'
import sys
a, b = (float(s.split()[1]) for s in sys.argv[1:3])
err = abs(a - b) / abs(b)
print(f"optimus {a:.10g}  reference {b:.10g}  relative error {err:.3e}")
sys.exit(0 if err <= 1e-5 else 1)
PY
}

case "$mode" in
  compare)
    "$optimus" init --layers 2 --embd 64 --heads 4 --seq 32 --seed 11 --out "$tmp/ckpt"
    "$dump" "$tmp/ckpt" "$tmp/text.txt" 4 32 5 "$tmp/dump.safetensors"
    $ref compare --checkpoint "$tmp/ckpt" --dump "$tmp/dump.safetensors" --tol 1e-5
    ;;
  eval)
    "$optimus" init --layers 2 --embd 64 --heads 4 --seq 32 --seed 12 --out "$tmp/ckpt"
    a=$("$optimus" eval --checkpoint "$tmp/ckpt" --data "$tmp/text.txt" --batch 4 --seq 32 --batches 3)
    b=$($ref eval --checkpoint "$tmp/ckpt" --data "$tmp/text.txt" --batch 4 --seq 32 --batches 3)
    same_loss "$a" "$b"
    ;;
  foreign)
    $py - "$tmp/foreign" <<PY
import sys, numpy as np
sys.path.insert(0, "$here")
import gpt_reference as g
cfg = dict(n_layer=2, n_embd=48, n_head=3, n_positions=24, vocab_size=256, layer_norm_epsilon=1e-5)
rng = np.random.default_rng(3)
params = {n: (rng.standard_normal(s) * 0.05).astype(np.float32) for n, s in g.parameter_shapes(cfg).items()}
g.write_checkpoint(sys.argv[1], cfg, params)
PY
    a=$("$optimus" eval --checkpoint "$tmp/foreign" --data "$tmp/text.txt" --batch 2 --seq 24 --batches 4)
    b=$($ref eval --checkpoint "$tmp/foreign" --data "$tmp/text.txt" --batch 2 --seq 24 --batches 4)
    same_loss "$a" "$b"
    ;;
  epsilon)
    $py - "$tmp/eps" <<PY
import sys, numpy as np
sys.path.insert(0, "$here")
import gpt_reference as g
cfg = dict(n_layer=2, n_embd=48, n_head=4, n_positions=24, vocab_size=256, layer_norm_epsilon=0.5)
rng = np.random.default_rng(5)
params = {n: (rng.standard_normal(s) * 0.05).astype(np.float32) for n, s in g.parameter_shapes(cfg).items()}
g.write_checkpoint(sys.argv[1], cfg, params)
PY
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
    args=(--checkpoint "$tmp/eps" --data "$tmp/text.txt" --batch 2 --seq 24 --batches 4)
    b=$($ref eval "${args[@]}")
    status=0
    echo -n "serial:      "; same_loss "$("$optimus" eval "${args[@]}")" "$b" || status=1
    echo -n "1d, 2 ranks: "; same_loss "$("$mpiexec" -np 2 "$optimus" eval --layout 1d "${args[@]}")" "$b" || status=1
    echo -n "2d, 4 ranks: "; same_loss "$("$mpiexec" -np 4 "$optimus" eval --layout 2d "${args[@]}")" "$b" || status=1
    exit $status
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
