#!/usr/bin/env bash
# Pre-emption: a 2D run on 4 ranks is asked to stop mid-run — SIGTERM to one rank (what srun and
# Slurm's --signal send), then SIGUSR1 to mpiexec (which forwards it to every rank). Each time the
# ranks agree at the end of the step, save that step's checkpoint, say so in one line and exit with
# 75; resumed with the same flags, the run ends byte for byte where a run that never stopped ends
# (weights, AdamW moments) with the same per-step losses.
# Usage: run_preemption.sh OPTIMUS MPIEXEC
set -uo pipefail
optimus=$1 mpiexec=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'pkill -KILL -f -- "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
yes 'the grid sums a row, then a column, then the ranks agree.' | head -c 20000 >"$tmp/text.txt"
steps=3000
flags=(--layout 2d --layers 1 --embd 32 --heads 4 --seq 16 --batch 4 --steps "$steps" --dropout 0.1 --eval-interval 0
  --eval-batches 1 --log-interval 0 --progress lines --data "$tmp/text.txt")
train() { timeout 120 "$mpiexec" -np 4 -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 "$optimus" train "${flags[@]}" "$@"; }
losses() { grep -o '"train_loss": [^,]*' "$1/metrics.jsonl"; }

train --out "$tmp/straight" >"$tmp/straight.log" 2>&1 || { cat "$tmp/straight.log"; fail "the straight run failed"; }

# stop_once NAME HOW: starts the run in $tmp/NAME, waits until it has logged 200 steps, sends the
# signal HOW says, and checks the stop; then resumes it to the end.
stop_once() {
  local name=$1 how=$2 out=$tmp/$1
  train --out "$out" >"$tmp/$name.log" 2>&1 &
  local job=$! waited=0
  until [[ -f $out/metrics.jsonl ]] && (($(wc -l <"$out/metrics.jsonl") >= 200)); do
    sleep 0.05
    ((++waited < 1200)) || fail "$name: no 200 steps within 60 s"
    kill -0 "$job" 2>/dev/null || { cat "$tmp/$name.log"; fail "$name: the run ended before the signal"; }
  done
  case $how in
    term-rank) pkill -TERM -n -f -- "optimus train .*--out $out" ;;
    usr1-mpiexec) pkill -USR1 -f -- "^$mpiexec .*--out $out" ;;
  esac
  wait "$job"
  local status=$?
  ((status == 75)) || { cat "$tmp/$name.log"; fail "$name: exit $status, not 75"; }
  local line
  line=$(grep "stopped by" "$tmp/$name.log") || { cat "$tmp/$name.log"; fail "$name: no 'stopped by' line"; }
  local dir
  dir=$(grep -o 'continue with --resume [^ ]*' <<<"$line" | awk '{print $4}')
  [[ -d $dir ]] || fail "$name: the checkpoint $dir it names does not exist"
  echo "$name: exit 75: $line"
  train --out "$out" --resume "$dir" >"$tmp/$name-resume.log" 2>&1 ||
    { cat "$tmp/$name-resume.log"; fail "$name: the resume failed"; }
  local f
  for f in model.safetensors train_state.safetensors; do
    cmp -s "$out/step_$(printf %06d $steps)/$f" "$tmp/straight/step_$(printf %06d $steps)/$f" ||
      fail "$name: $f at step $steps differs from the run that never stopped"
  done
  [[ "$(losses "$out")" == "$(losses "$tmp/straight")" ]] || fail "$name: the losses differ from the straight run's"
  echo "$name: resumed from $(basename "$dir"); step $steps's weights, moments and every loss equal the straight run's"
}

stop_once term-rank term-rank
stop_once usr1-mpiexec usr1-mpiexec
