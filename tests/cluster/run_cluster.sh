#!/usr/bin/env bash
# The cluster tests (label cluster): real multi-host MPI runs between network namespaces made by
# scripts/cluster, each case on a cluster of its own that it removes on every exit (trap), checking
# afterwards that no namespace, veth or process of it is left. Exit 77 (skipped) where the machine
# refuses network namespaces.
#   equal:     2D and 1D on 4 ranks over 2 hosts (2 ranks each: the 2×2 grid's rows each on one
#              host) train 20 steps with dropout to the same losses and byte-identical checkpoints
#              as the same runs on one host; the link's counters show the bytes crossed it; a
#              checkpoint of the cluster resumes on one host, and one of one host on the cluster,
#              both to the straight run's bytes.
#   lost_host: host 1 is killed (every process in its namespace) during a 2D run with step
#              checkpoints; the job ends within 60 s naming the lost host; every step folder left
#              is whole, the last one evaluates to the validation loss the run logged for it, and
#              the run resumes from it on one host and finishes.
# Usage: run_cluster.sh CASE ROOT OPTIMUS
set -uo pipefail
case_name=$1 root=$2 optimus=$3
cluster=$root/scripts/cluster
name=c${case_name:0:1}$$
name=${name:0:8}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)

fail() {
  echo "FAIL: $*"
  exit 1
}
left_behind() {  # what of this cluster still exists: namespaces, and processes naming our folder
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$name-" || true
  pgrep -af -- "$tmp" | grep -v "pgrep" || true
}
cleanup() {
  "$cluster" down --name "$name" >/dev/null 2>&1
  local left
  left=$(left_behind)
  rm -rf "$tmp"
  if [[ -n $left ]]; then
    echo "FAIL: left behind after down: $left"
    exit 1
  fi
}
trap cleanup EXIT

"$cluster" up --hosts 2 --name "$name"
status=$?
if ((status == 77)); then
  echo "SKIPPED: this machine refuses network namespaces"
  exit 77
fi
((status == 0)) || fail "scripts/cluster up failed"

yes 'the grid sums a row, then a column, then the ranks agree.' | head -c 20000 >"$tmp/text.txt"
head -c 4000 "$tmp/text.txt" >"$tmp/val.txt"
threads=(-x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1)
model=(--layers 1 --embd 32 --heads 4 --seq 16 --batch 4 --dropout 0.1)
quiet=(--eval-batches 2 --progress lines --log-interval 1 --data "$tmp/text.txt" --val "$tmp/val.txt")

on_cluster() { timeout 120 "$cluster" run --name "$name" -np 4 "${threads[@]}" "$optimus" "$@"; }
on_one_host() { timeout 120 mpiexec -np 4 --bind-to none "${threads[@]}" "$optimus" "$@"; }

# The losses a run logged, one per line (as metrics.jsonl prints them).
losses() { grep -o '"train_loss": [^,]*' "$1/metrics.jsonl"; }
# Every file of two step folders is byte for byte the same.
same_checkpoint() {
  local a=$1 b=$2 f
  [[ -d $a && -d $b ]] || fail "missing checkpoint: $a or $b"
  for f in "$a"/*; do cmp -s "$f" "$b/$(basename "$f")" || fail "$(basename "$f") differs between $a and $b"; done
}

case_equal() {
  local layout before after
  for layout in 2d 1d; do
    before=$("$cluster" counters --name "$name" | grep "^host 1" | awk '{print $5 + $7}')
    on_cluster train --layout "$layout" "${model[@]}" "${quiet[@]}" --steps 20 --eval-interval 0 \
      --checkpoint-interval 10 --keep 0 --out "$tmp/$layout-cluster" >"$tmp/$layout-cluster.log" 2>&1 ||
      { cat "$tmp/$layout-cluster.log"; fail "$layout on the cluster failed"; }
    after=$("$cluster" counters --name "$name" | grep "^host 1" | awk '{print $5 + $7}')
    on_one_host train --layout "$layout" "${model[@]}" "${quiet[@]}" --steps 20 --eval-interval 0 \
      --checkpoint-interval 10 --keep 0 --out "$tmp/$layout-one" >"$tmp/$layout-one.log" 2>&1 ||
      { cat "$tmp/$layout-one.log"; fail "$layout on one host failed"; }
    [[ "$(losses "$tmp/$layout-cluster")" == "$(losses "$tmp/$layout-one")" ]] ||
      fail "$layout: the cluster's losses differ from one host's"
    same_checkpoint "$tmp/$layout-cluster/step_000020" "$tmp/$layout-one/step_000020"
    same_checkpoint "$tmp/$layout-cluster/step_000010" "$tmp/$layout-one/step_000010"
    ((after - before > 100000)) || fail "$layout: only $((after - before)) bytes crossed host 1's link"
    echo "$layout: 20 steps on 2 hosts = on one host, byte for byte; $((after - before)) bytes through host 1's link"
  done
  # Resume across: the cluster's step 10 on one host, and one host's step 10 on the cluster.
  on_one_host train --layout 2d "${model[@]}" "${quiet[@]}" --steps 20 --eval-interval 0 --checkpoint-interval 10 \
    --keep 0 --out "$tmp/across-1" --resume "$tmp/2d-cluster/step_000010" >"$tmp/across-1.log" 2>&1 ||
    { cat "$tmp/across-1.log"; fail "resuming the cluster's checkpoint on one host failed"; }
  same_checkpoint "$tmp/across-1/step_000020" "$tmp/2d-one/step_000020"
  on_cluster train --layout 2d "${model[@]}" "${quiet[@]}" --steps 20 --eval-interval 0 --checkpoint-interval 10 \
    --keep 0 --out "$tmp/across-2" --resume "$tmp/2d-one/step_000010" >"$tmp/across-2.log" 2>&1 ||
    { cat "$tmp/across-2.log"; fail "resuming one host's checkpoint on the cluster failed"; }
  same_checkpoint "$tmp/across-2/step_000020" "$tmp/2d-one/step_000020"
  echo "2d: step 10 of the cluster resumed on one host, and of one host on the cluster: both end at the straight run's bytes"
}

case_lost_host() {
  local run=(train --layout 2d "${model[@]}" "${quiet[@]}" --steps 60 --eval-interval 4 --checkpoint-interval 4
    --keep 0 --out "$tmp/lost")
  on_cluster "${run[@]}" >"$tmp/lost.log" 2>&1 &
  local job=$! waited=0
  until [[ -d $tmp/lost/step_000012 ]]; do
    sleep 0.1
    ((++waited < 600)) || fail "no step 12 checkpoint within 60 s"
    kill -0 "$job" 2>/dev/null || { cat "$tmp/lost.log"; fail "the run ended before host 1 was lost"; }
  done
  "$cluster" kill-host 1 --name "$name"
  local start=$SECONDS
  wait "$job"
  local status=$?
  local took=$((SECONDS - start))
  ((status != 0)) || fail "the job exited 0 after losing a host"
  ((took <= 60)) || fail "the job took $took s to end after losing a host"
  grep -q "198.18.*\|$name-h1" <(grep -iE "lost|peer host|remote daemon" "$tmp/lost.log") ||
    { cat "$tmp/lost.log"; fail "the job's error does not name the lost host"; }
  echo "lost host: the job ended $took s after host 1 was killed, exit $status: $(grep -m1 -iE 'lost communication|Remote daemon' "$tmp/lost.log" | xargs)"
  # What is left: whole step folders only; the last evaluates to the loss the run logged for it.
  local last step loss logged
  # A step being written when the host was lost is a hidden .tmp_step_ folder (the trainer renames a
  # whole one into place, and removes such leftovers when it resumes); anything else must be whole.
  shopt -s nullglob dotglob
  for step in "$tmp"/lost/*/; do
    [[ $(basename "$step") == .tmp_step_* ]] && continue
    [[ $(basename "$step") =~ ^step_[0-9]{6}$ ]] || fail "a folder that is not a whole step is visible: $step"
    for f in config.json model.safetensors train_state.safetensors; do
      [[ -s $step/$f ]] || fail "$step has no $f"
    done
  done
  local steps=("$tmp"/lost/step_*)  # sorted: the names are zero-padded
  last=${steps[-1]}
  step=$((10#${last##*_}))
  loss=$("$optimus" eval --checkpoint "$last" --data "$tmp/val.txt" --batch 4 --seq 16 --batches 2 | awk '{print $2}')
  logged=$(grep "\"step\": $step, \"val_loss\"" "$tmp/lost/metrics.jsonl" | grep -o '"val_loss": [0-9.]*' | awk '{print $2}')
  [[ -n $logged ]] || fail "the run logged no validation loss for step $step"
  python3 -c "import sys; a, b = float('$loss'), float('$logged'); sys.exit(abs(a - b) > 5e-7)" ||
    fail "step $step evaluates to $loss, but the run logged $logged"
  echo "lost host: the last checkpoint (step $step) evaluates to $loss, the logged validation loss $logged"
  on_one_host "${run[@]}" --resume "$last" >"$tmp/resume.log" 2>&1 || { cat "$tmp/resume.log"; fail "resume failed"; }
  [[ -d $tmp/lost/step_000060 ]] || fail "the resumed run did not reach step 60"
  local leftovers=("$tmp"/lost/.tmp_step_*)
  ((${#leftovers[@]} == 0)) || fail "the resumed run left ${leftovers[*]}"
  echo "lost host: resumed from step $step on one host and finished at step 60"
}

"case_$case_name"
