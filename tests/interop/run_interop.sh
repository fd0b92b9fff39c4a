#!/usr/bin/env bash
# Interoperability with Hugging Face transformers (label interop): optimus's checkpoints
# load in GPT2LMHeadModel.from_pretrained and give optimus eval's loss, and a model saved by
# transformers' save_pretrained gives transformers' loss in optimus eval, in serial and in 2D on 4
# ranks; a model trained 20 steps in 2D on 4 ranks gives the same loss in optimus eval, the chapter 1
# PyTorch reference and transformers; a run in 2D on 4 ranks started --init-from a transformers model
# with GPT-2's vocabulary logs, at step 0, transformers' loss, and lowers it; and in 3D on 8 ranks,
# the transformers model evaluates to transformers' loss, a run started --init-from the GPT-2
# vocabulary one (V padded to 4·⌈V/4⌉) logs its step-0 loss, and a model trained 10 steps in 3D
# gives optimus eval's loss in transformers. Each relative difference
# ≤ 1e-5. The model (L=2, C=64, NH=4,
# T=32, V=256) fits a 2×2 grid. transformers comes from .venv/ (scripts/setup_venv); without it the
# test fails, it never skips.
# Usage: run_interop.sh OPTIMUS MPIEXEC VENV_PYTHON
set -euo pipefail
optimus=$1 mpiexec=$2 venv_python=$3
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONNOUSERSITE=1

if [[ ! -x "$venv_python" ]]; then
  echo "FAIL: $venv_python does not exist: the interop test needs the virtual environment .venv/ with" \
       "transformers; run scripts/setup (it calls scripts/setup_venv)" >&2
  exit 1
fi
if ! versions=$("$venv_python" -c "import torch, transformers, safetensors
print(f'transformers {transformers.__version__}, safetensors {safetensors.__version__}, torch {torch.__version__}')"); then
  echo "FAIL: $venv_python cannot import transformers (see above); run scripts/setup_venv to install" \
       "scripts/requirements-interop.txt into .venv/" >&2
  exit 1
fi
echo "using $versions ($venv_python)"
hf=("$venv_python" "$here/hf_interop.py")
ref=(/usr/bin/python3 "$here/../reference/gpt_reference.py")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -c "
import random
r = random.Random(17)
words = ['the', 'tensor', 'grid', 'of', 'ranks', 'sums', 'a', 'block', 'row', 'column', 'and', 'broadcast']
open('$tmp/text.txt', 'w').write(' '.join(r.choice(words) + ('.\n' if r.random() < 0.1 else '') for _ in range(8000)))"
eval_args=(--data "$tmp/text.txt" --batch 4 --seq 32 --batches 3)
model=(--layers 2 --embd 64 --heads 4 --seq 32)

status=0
same() {  # same WHAT "loss A" "loss B": |A - B| / |B| <= 1e-5
  /usr/bin/python3 -c "
import sys
a, b = float('$2'.split()[1]), float('$3'.split()[1])
e = abs(a - b) / abs(b)
print(f'{\"ok  \" if e <= 1e-5 else \"FAIL\"} $1: {a:.10g} vs {b:.10g}, relative difference {e:.2e}')
sys.exit(0 if e <= 1e-5 else 1)" || status=1
}
where() { (($1 == 1)) && echo serial || echo "2d, $1 ranks"; }
optimus_eval() {  # optimus_eval NP CHECKPOINT: serial for NP = 1, else 2D on NP ranks
  if (($1 == 1)); then "$optimus" eval --checkpoint "$2" "${eval_args[@]}"
  else "$mpiexec" -np "$1" "$optimus" eval --layout 2d --checkpoint "$2" "${eval_args[@]}"; fi
}

# 1. optimus -> transformers: a checkpoint trained 10 steps in serial (biases and LayerNorms no
#    longer at their initial 0 and 1, so each is checked), loaded by from_pretrained.
"$optimus" train --data "$tmp/text.txt" --steps 10 --batch 4 "${model[@]}" --seed 3 --eval-batches 1 \
  --log-interval 10 --out "$tmp/serial" >/dev/null
hf_loss=$("${hf[@]}" eval --checkpoint "$tmp/serial/step_000010" "${eval_args[@]}")
for np in 1 4; do
  loss=$(optimus_eval $np "$tmp/serial/step_000010")
  same "optimus checkpoint, optimus eval ($(where $np)) vs transformers" "$loss" "$hf_loss"
done

# 2. transformers -> optimus: GPT2LMHeadModel(GPT2Config(...)) with random weights, save_pretrained.
"${hf[@]}" save --out "$tmp/hf" --layers 2 --embd 64 --heads 4 --positions 32 --seed 5
hf_loss=$("${hf[@]}" eval --checkpoint "$tmp/hf" "${eval_args[@]}")
for np in 1 4; do
  loss=$(optimus_eval $np "$tmp/hf")
  same "transformers checkpoint, optimus eval ($(where $np)) vs transformers" "$loss" "$hf_loss"
done

# 3. Trained 20 steps in 2D on 4 ranks: optimus eval, the PyTorch reference, transformers.
"$mpiexec" -np 4 "$optimus" train --layout 2d --data "$tmp/text.txt" --steps 20 --batch 4 --seq 32 \
  --layers 2 --embd 64 --heads 4 --out "$tmp/run2d" >/dev/null
ckpt=$tmp/run2d/step_000020
optimus_loss=$(optimus_eval 1 "$ckpt")
loss_2d=$(optimus_eval 4 "$ckpt")
ref_loss=$("${ref[@]}" eval --checkpoint "$ckpt" "${eval_args[@]}")
hf_loss=$("${hf[@]}" eval --checkpoint "$ckpt" "${eval_args[@]}")
what="2d-trained checkpoint (20 steps, 4 ranks)"
same "$what, optimus eval (2d, 4 ranks) vs optimus eval (serial)" "$loss_2d" "$optimus_loss"
same "$what, PyTorch reference vs optimus eval (serial)" "$ref_loss" "$optimus_loss"
same "$what, transformers vs optimus eval (serial)" "$hf_loss" "$optimus_loss"

# 4. Fine-tuning: a new run in 2D on 4 ranks from a transformers model with GPT-2's vocabulary
#    (50257, padded on the grid), --seq shorter than its n_positions. Its step-0 validation loss is
#    transformers' on the same windows; after 8 steps transformers evaluates the run's checkpoint to
#    the loss the run logged, and it is lower.
"${hf[@]}" save --out "$tmp/gpt2" --layers 2 --embd 64 --heads 4 --positions 64 --vocab 50257 --seed 7 >/dev/null
"$mpiexec" -np 4 "$optimus" train --layout 2d --init-from "$tmp/gpt2" --data "$tmp/text.txt" --val "$tmp/text.txt" \
  --batch 4 --seq 32 --eval-batches 3 --steps 8 --warmup 2 --lr 3e-3 --log-interval 8 --out "$tmp/tuned" >/dev/null
logged() {  # logged STEP: "loss X" for the val_loss the run wrote at STEP
  /usr/bin/python3 -c "
import json
print('loss', *[r['val_loss'] for r in map(json.loads, open('$tmp/tuned/metrics.jsonl')) if r['step'] == $1 and 'val_loss' in r])"
}
start=$(logged 0) end=$(logged 8)
what="--init-from a transformers GPT-2 (V=50257, 2d, 4 ranks)"
same "$what, step-0 validation loss vs transformers" "$start" "$("${hf[@]}" eval --checkpoint "$tmp/gpt2" "${eval_args[@]}")"
same "$what, step-8 validation loss vs transformers" "$end" \
  "$("${hf[@]}" eval --checkpoint "$tmp/tuned/step_000008" "${eval_args[@]}")"
if /usr/bin/python3 -c "import sys; sys.exit(0 if float('${end#loss }') < float('${start#loss }') else 1)"; then
  echo "ok   $what: training lowered the validation loss from ${start#loss } to ${end#loss }"
else
  echo "FAIL $what: the validation loss went from ${start#loss } to ${end#loss }"; status=1
fi

# 5. 3D on 8 ranks (chapter 7): the same checkpoints through the cube.
loss=$("$mpiexec" -np 8 "$optimus" eval --layout 3d --checkpoint "$tmp/hf" "${eval_args[@]}")
same "transformers checkpoint, optimus eval (3d, 8 ranks) vs transformers" "$loss" \
  "$("${hf[@]}" eval --checkpoint "$tmp/hf" "${eval_args[@]}")"
"$mpiexec" -np 8 "$optimus" train --layout 3d --init-from "$tmp/gpt2" --data "$tmp/text.txt" --val "$tmp/text.txt" \
  --batch 4 --seq 32 --eval-batches 3 --steps 1 --log-interval 1 --out "$tmp/tuned3d" >/dev/null
same "--init-from a transformers GPT-2 (V=50257, 3d, 8 ranks), step-0 validation loss vs transformers" \
  "loss $(/usr/bin/python3 -c "
import json
print(*[r['val_loss'] for r in map(json.loads, open('$tmp/tuned3d/metrics.jsonl')) if r['step'] == 0 and 'val_loss' in r])")" \
  "$("${hf[@]}" eval --checkpoint "$tmp/gpt2" "${eval_args[@]}")"
"$mpiexec" -np 8 "$optimus" train --layout 3d --data "$tmp/text.txt" --steps 10 --batch 4 "${model[@]}" --seed 3 \
  --eval-batches 1 --log-interval 10 --out "$tmp/run3d" >/dev/null
same "3d-trained checkpoint (10 steps, 8 ranks), transformers vs optimus eval (3d, 8 ranks)" \
  "$("${hf[@]}" eval --checkpoint "$tmp/run3d/step_000010" "${eval_args[@]}")" \
  "$("$mpiexec" -np 8 "$optimus" eval --layout 3d --checkpoint "$tmp/run3d/step_000010" "${eval_args[@]}")"

((status == 0)) && echo "PASS: every loss agrees within 1e-5" || echo "FAIL: a loss differs by more than 1e-5"
exit $status
