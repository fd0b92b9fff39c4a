#!/usr/bin/env bash
# `optimus train --device cuda` end to end (label gpu): a few steps on the GPU write a
# checkpoint that the CPU evaluates to the loss the GPU evaluates it to; the same run on the CPU
# logs the same losses; 1D on 2 ranks and 2D on 4 ranks evaluate it on the GPU (the device
# communicator chosen automatically: staged where ranks share a GPU) to the same loss; a 2D run
# trains on the GPU; a forced nccl that cannot work is one sentence; bench runs on the GPU.
# Relative differences ≤ 1e-5 for evaluations, ≤ 1e-4 for the training losses (L5).
# Without a GPU it exits 77, which ctest reports as skipped.
# Usage: run_train_cuda.sh OPTIMUS MPIEXEC GPU_PROBE
set -euo pipefail
optimus=$1 mpiexec=$2 probe=$3
if ! gpus=$("$probe"); then
  echo "$gpus"
  exit 77
fi
echo "GPUs: $gpus"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/env python3 -c "
import random
r = random.Random(7)
open('$tmp/text.txt', 'w').write(' '.join(r.choice(['grid', 'row', 'col', 'sum', 'rank', 'gpu']) for _ in range(8000)))"
status=0
same() {  # same NAME "loss A" "loss B" [TOLERANCE]
  python3 -c "
import sys
a, b = float('$2'.split()[-1]), float('$3'.split()[-1])
e = abs(a - b) / abs(b)
print(f'$1: {a:.10g} vs {b:.10g}, relative difference {e:.2e}')
sys.exit(0 if e <= ${4:-1e-5} else 1)" || status=1
}
losses() { grep -o '"train_loss": [^,]*' "$1/metrics.jsonl" | awk '{print $2}'; }

train_args=(--data "$tmp/text.txt" --batch 4 --seq 32 --layers 2 --embd 64 --heads 4 --dropout 0.1
            --eval-interval 0 --eval-batches 2 --log-interval 1 --progress lines --seed 3)
eval_args=(--data "$tmp/text.txt" --batch 4 --seq 32 --batches 3)

"$optimus" train --device cuda "${train_args[@]}" --steps 4 --out "$tmp/gpu"
"$optimus" train "${train_args[@]}" --steps 4 --out "$tmp/cpu"
ckpt=$tmp/gpu/step_000004
on_gpu=$("$optimus" eval --device cuda --checkpoint "$ckpt" "${eval_args[@]}")
on_cpu=$("$optimus" eval --checkpoint "$ckpt" "${eval_args[@]}")
same "GPU-trained checkpoint, CPU eval vs GPU eval" "$on_cpu" "$on_gpu"
paste <(losses "$tmp/gpu") <(losses "$tmp/cpu") >"$tmp/pairs"
while read -r g c; do same "training loss, GPU run vs CPU run" "$g" "$c" 1e-4; done <"$tmp/pairs"

got=$("$mpiexec" -np 2 "$optimus" eval --layout 1d --device cuda --checkpoint "$ckpt" "${eval_args[@]}")
same "GPU-trained checkpoint, 1d GPU eval on 2 ranks vs CPU eval" "$got" "$on_cpu"
got=$("$mpiexec" -np 4 "$optimus" eval --layout 2d --device cuda --checkpoint "$ckpt" "${eval_args[@]}")
same "GPU-trained checkpoint, 2d GPU eval on 4 ranks vs CPU eval" "$got" "$on_cpu"

# 2D on 4 ranks trains on the GPU; its checkpoint evaluates alike on the CPU and the GPU.
"$mpiexec" -np 4 "$optimus" train --layout 2d --device cuda "${train_args[@]}" --steps 2 --out "$tmp/gpu2d"
on_gpu=$("$mpiexec" -np 4 "$optimus" eval --layout 2d --device cuda --checkpoint "$tmp/gpu2d/step_000002" \
  "${eval_args[@]}")
on_cpu=$("$optimus" eval --checkpoint "$tmp/gpu2d/step_000002" "${eval_args[@]}")
same "2d-on-GPU checkpoint, serial CPU eval vs 2d GPU eval" "$on_cpu" "$on_gpu"

# NCCL needs a GPU per rank: with more ranks than GPUs a forced nccl is refused in one sentence.
np=$((gpus + 1))
if msg=$("$mpiexec" -np $np "$optimus" eval --layout 1d --device cuda --device-comm nccl --checkpoint "$ckpt" \
  --data "$tmp/text.txt" --batch 4 --seq 32 2>&1); then
  echo "DIFFERENT: nccl with $np ranks on $gpus GPU(s) was accepted"; status=1
elif grep -q "needs one GPU per rank" <<<"$msg"; then
  echo "refused as expected: $(grep "error:" <<<"$msg" | head -1)"
else
  echo "refused, but not with the expected sentence: $msg"; status=1
fi

line=$("$optimus" bench --device cuda --model tiny --batch 4 --steps 2 --warmup 1)
echo "$line"
if ! grep -q '"device": "cuda"' <<<"$line"; then echo "bench did not run on the GPU"; status=1; fi
exit $status
