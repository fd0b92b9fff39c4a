#!/usr/bin/env bash
# Slurm on the emulated cluster (label cluster): `scripts/cluster up --hosts 2 --slurm` starts
# munged, slurmctld and one slurmd per host; scripts/slurm/train_2d.sbatch is submitted with sbatch
# as a user would, and its srun (PMIx) starts the 4 ranks over the 2 hosts.
#   equal:      20 steps of 2D with dropout train to the same losses and byte-identical checkpoints
#               as the same run on one host (mpiexec).
#   signals:    a job with --requeue is stopped three times, by Slurm's own means: scancel
#               --signal=TERM (to the job's steps: the ranks), scancel --batch --signal=TERM (to the
#               batch script, which passes it on), and scontrol requeue (Slurm ends the job and
#               queues it again). Each time the job is requeued, its next run resumes from the
#               newest checkpoint, and the last run ends at a straight run's bytes (cmp).
#   time limit: a job submitted with --time=1 --signal=B:USR1@58 is sent SIGUSR1 by Slurm as its
#               time limit nears; it saves the step, exits 75, is requeued, resumes, and ends at the
#               straight run's bytes.
# Then `down`, and nothing may be left: no namespace of the cluster, no slurmctld, slurmd,
# slurmstepd or munged process, no state folder. Exit 77 (skipped) where the machine refuses
# network namespaces or the Slurm packages are not installed.
# Usage: run_slurm.sh ROOT OPTIMUS
set -uo pipefail
root=$1 optimus=$2
cluster=$root/scripts/cluster
name=sl$$
name=${name:0:8}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
start=$SECONDS

fail() {
  echo "FAIL: $*"
  exit 1
}
daemons() {  # Slurm and munge processes running (not zombies, which are dead) but those of before
  ps -eo pid=,stat=,comm= | awk '$2 !~ /^Z/ && $3 ~ /^(slurmctld|slurmd|slurmstepd|munged|slurmscriptd)$/ {print $1, $3}' |
    grep -vxF -f <(printf '%s\n' "${before[@]}") || true
}
cleanup() {
  local status=$?
  "$cluster" down --name "$name" >/dev/null 2>&1
  local left waited=0
  while left=$(daemons) && [[ -n $left ]] && ((waited++ < 20)); do sleep 0.1; done
  left+=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$name-" || true)
  [[ ! -e /run/optimus-cluster/$name ]] || left+=" /run/optimus-cluster/$name"
  rm -rf "$tmp"
  if [[ -n $left ]]; then
    echo "FAIL: left behind after down: $left"
    exit 1
  fi
  if ((status == 0)); then
    echo "down: no namespace of $name, no slurmctld, slurmd, slurmstepd or munged left ($((SECONDS - start)) s in all)"
  fi
}
trap cleanup EXIT

before=("")  # a munged or slurmd of the machine's own (a system service) is not the cluster's
mapfile -t -O 1 before < <(daemons)
"$cluster" up --hosts 2 --slurm --name "$name"
status=$?
if ((status == 77)); then
  echo "SKIPPED: this machine refuses network namespaces, or Slurm (slurmctld, slurmd, slurm-client, munge) is not installed"
  exit 77
fi
((status == 0)) || fail "scripts/cluster up --slurm failed"
slurm() { timeout 30 "$cluster" slurm --name "$name" "$@"; }

# Nothing of Slurm's listens outside the cluster: no socket of its daemons in the machine's own
# network namespace, and the hosts' namespaces have no address but loopback and the cluster's.
! ss -ltnpH | grep -qE 'slurm|munge' || fail "a Slurm daemon listens in the machine's own namespace"
for i in 0 1; do
  addresses=$(ip -n "$name-h$i" -o -4 addr show | awk '{print $4}' | grep -v '^127\.' | xargs)
  [[ $addresses =~ ^198\.1[89]\.[0-9]+\.[0-9]+/24$ ]] || fail "host $i has the addresses $addresses"
done
echo "up: $(slurm sinfo -h -N -o '%N %T %c' | xargs) (each daemon in its host's namespace, addresses $(
  ip -n "$name-h0" -o -4 addr show dev eth0 | awk '{print $4}') …)"

yes 'the grid sums a row, then a column, then the ranks agree.' | head -c 20000 >"$tmp/text.txt"
head -c 4000 "$tmp/text.txt" >"$tmp/val.txt"
# The emulated hosts share this machine's cores (4 ranks on 2 cores): ranks must yield while they
# wait (mpiexec does so by itself when it oversubscribes; ranks started by srun are told here).
export OPENBLAS_NUM_THREADS=1 OMPI_MCA_mpi_yield_when_idle=1 OPTIMUS=$optimus DATA=$tmp/text.txt VAL=$tmp/val.txt
model=(--layers 1 --embd 32 --heads 4 --seq 16 --batch 4 --dropout 0.1)
quiet=(--eval-interval 0 --eval-batches 2 --progress lines --keep 0)
# The allocation: 2 hosts of 2 cores, 2 ranks a host (rows of the 2×2 grid), a core each.
allocation=(--nodes 2 --ntasks 4 --ntasks-per-node 2 --cpus-per-task 1)
cd "$tmp" || fail "no $tmp"

on_one_host() {
  timeout 120 mpiexec -np 4 --bind-to none -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
    "$optimus" train --layout 2d --data "$tmp/text.txt" --val "$tmp/val.txt" "$@"
}
losses() { grep -o '"train_loss": [^,]*' "$1/metrics.jsonl"; }
same_checkpoint() {
  local a=$1 b=$2 f
  [[ -d $a && -d $b ]] || fail "missing checkpoint: $a or $b"
  for f in "$a"/*; do cmp "$f" "$b/$(basename "$f")" || fail "$(basename "$f") differs between $a and $b"; done
}
job_state() { slurm scontrol show job "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
# Waits until job $1 has ended (COMPLETED or FAILED ...), at most $2 seconds. SIGNALING is a running
# job with a signal on its way (its time limit's warning).
wait_job() {
  local job=$1 limit=$2 state t0=$SECONDS
  while state=$(job_state "$job") && [[ $state =~ ^(PENDING|RUNNING|CONFIGURING|SIGNALING|COMPLETING|REQUEUED|REQUEUE_HOLD|REQUEUE_FED)$ ]]; do
    ((SECONDS - t0 < limit)) || { cat "$tmp/$job.out"; fail "job $job still $state after $limit s"; }
    sleep 0.2
  done
  echo "$state"
}
# Waits until run number $2 of job $1 (output folder $3) has started and trained 20 steps.
wait_run() {
  local job=$1 run=$2 out=$3 t0=$SECONDS m0
  metric_lines() { if [[ -f $out/metrics.jsonl ]]; then wc -l <"$out/metrics.jsonl"; else echo 0; fi; }
  until [[ -f $tmp/$job.out ]] && (($(grep -c '^training [0-9]* parameters' "$tmp/$job.out") >= run)); do
    ((SECONDS - t0 < 60)) || { cat "$tmp/$job.out"; fail "job $job: no run $run within 60 s"; }
    sleep 0.1
  done
  m0=$(metric_lines)
  until (($(metric_lines) >= m0 + 20)); do
    ((SECONDS - t0 < 60)) || { cat "$tmp/$job.out"; fail "job $job: run $run trains no 20 steps within 60 s"; }
    [[ $(job_state "$job") == RUNNING ]] || { cat "$tmp/$job.out"; fail "job $job's run $run ended before it was stopped"; }
    sleep 0.1
  done
}

# ---- equal: the sbatch script on 2 hosts = mpiexec on one ---------------------------------------
t=$SECONDS
job=$(OUT=$tmp/equal slurm sbatch --parsable "${allocation[@]}" --output="$tmp/%j.out" \
  "$root/scripts/slurm/train_2d.sbatch" "${model[@]}" "${quiet[@]}" --steps 20 --log-interval 1 --checkpoint-interval 10) ||
  fail "sbatch failed"
state=$(wait_job "$job" 60)
[[ $state == COMPLETED ]] || { cat "$tmp/$job.out"; fail "the job ended $state"; }
on_one_host "${model[@]}" "${quiet[@]}" --steps 20 --log-interval 1 --checkpoint-interval 10 --out "$tmp/equal-one" \
  >"$tmp/equal-one.log" 2>&1 || { cat "$tmp/equal-one.log"; fail "the run on one host failed"; }
[[ "$(losses "$tmp/equal")" == "$(losses "$tmp/equal-one")" ]] || fail "the Slurm job's losses differ from one host's"
same_checkpoint "$tmp/equal/step_000010" "$tmp/equal-one/step_000010"
same_checkpoint "$tmp/equal/step_000020" "$tmp/equal-one/step_000020"
grep -q '^train_2d.sbatch: 4 ranks (a 2x2 grid) on 2 nodes, 2 per node, 1 threads each, device cpu, launcher srun$' "$tmp/$job.out" ||
  { cat "$tmp/$job.out"; fail "the script did not say it started 4 ranks on 2 nodes with srun"; }
echo "equal: job $job (srun --mpi=pmix, ranks on $(slurm scontrol show job "$job" | grep -oP '^\s+NodeList=\K\S+')):" \
  "20 steps = mpiexec on one host, losses and checkpoints byte for byte ($((SECONDS - t)) s)"

# ---- pre-emption: straight runs on one host first -------------------------------------------------
signal_steps=4000 limit_steps=20000
long=("${model[@]}" "${quiet[@]}" --log-interval 1000)
on_one_host "${long[@]}" --steps "$signal_steps" --out "$tmp/straight-signals" >"$tmp/straight-signals.log" 2>&1 ||
  { cat "$tmp/straight-signals.log"; fail "the straight run failed"; }
on_one_host "${long[@]}" --steps "$limit_steps" --out "$tmp/straight-limit" >"$tmp/straight-limit.log" 2>&1 ||
  { cat "$tmp/straight-limit.log"; fail "the straight run failed"; }

# stopped JOB RUN: checks that run RUN of JOB (and every run before it) ended with exit code 75 and
# requeued the job (the script's line), and that run RUN + 1 resumed from a later step; prints
# how run RUN stopped (optimus's stop line, when srun passed it on) and where run RUN + 1 resumed.
stopped() {
  local job=$1 run=$2 requeues resumes how
  requeues=$(grep -c "^train_2d.sbatch: optimus saved its step and stopped; requeueing job $job$" "$tmp/$job.out")
  ((requeues >= run)) || { cat "$tmp/$job.out"; fail "job $job: $requeues runs of $run ended with exit code 75 and a requeue"; }
  mapfile -t resumes < <(grep -o '^train_2d.sbatch: resuming from .*step_[0-9]*' "$tmp/$job.out" | grep -o '[0-9]*$')
  ((${#resumes[@]} >= run)) || { cat "$tmp/$job.out"; fail "job $job: ${#resumes[@]} runs resumed, not $run"; }
  ((run == 1 || 10#${resumes[run - 1]} > 10#${resumes[run - 2]})) || fail "job $job: run $((run + 1)) resumed from no later step"
  how=$(grep -o 'stopped by SIG[A-Z0-9]* after step [0-9]*' "$tmp/$job.out" | sed -n "${run}p")
  [[ -n $how ]] || how="stopped (srun did not pass on the stop line of optimus)"
  echo "$how, exit code 75, requeued; run $((run + 1)) resumed from step_${resumes[run - 1]}"
}

# ---- signals: scancel --signal=TERM, scancel --batch --signal=TERM, scontrol requeue --------------
t=$SECONDS
job=$(OUT=$tmp/signals slurm sbatch --parsable --requeue --open-mode=append "${allocation[@]}" --output="$tmp/%j.out" \
  "$root/scripts/slurm/train_2d.sbatch" "${long[@]}" --steps "$signal_steps") || fail "sbatch failed"
wait_run "$job" 1 "$tmp/signals"
slurm scancel --signal=TERM "$job"
wait_run "$job" 2 "$tmp/signals"
echo "signals: scancel --signal=TERM: $(stopped "$job" 1)"
slurm scancel --batch --signal=TERM "$job"
wait_run "$job" 3 "$tmp/signals"
echo "signals: scancel --batch --signal=TERM: $(stopped "$job" 2)"
slurm scontrol requeue "$job"
wait_run "$job" 4 "$tmp/signals"
echo "signals: scontrol requeue: $(stopped "$job" 3)"
state=$(wait_job "$job" 90)
[[ $state == COMPLETED ]] || { cat "$tmp/$job.out"; fail "job $job ended $state"; }
restarts=$(slurm scontrol show job "$job" | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
((restarts == 3)) || { cat "$tmp/$job.out"; fail "job $job was restarted $restarts times, not 3"; }
final=$(printf 'step_%06d' "$signal_steps")
same_checkpoint "$tmp/signals/$final" "$tmp/straight-signals/$final"
echo "signals: job $job ran 4 times (Restarts=$restarts), ended COMPLETED; cmp: its $final = the straight run's ($((SECONDS - t)) s)"

# ---- time limit: --time=1 --signal=B:USR1@58 --------------------------------------------------------
# slurmctld looks at time limits every 30 s from its start; the job is sent SIGUSR1 at the first
# look after it is within 58 s of its limit, i.e. at the first look after it starts. The job is
# submitted 8 to 12 s before a look, so that its first run is sure to be training then (and not
# to have finished: 20000 steps take more than 20 s on the cluster).
t=$SECONDS
ctld_start=$(date +%s -d "$(grep -m1 'Running as primary controller' "/run/optimus-cluster/$name/slurm/log/slurmctld.log" |
  sed 's/^\[\([^]]*\)\].*/\1/')") || fail "no start time in slurmctld's log"
to_look=$((30 - ($(date +%s) - ctld_start) % 30))
((to_look >= 8)) || { sleep "$to_look"; to_look=30; }
((to_look <= 12)) || sleep $((to_look - 12))
job=$(OUT=$tmp/limit slurm sbatch --parsable --requeue --open-mode=append --time=1 --signal=B:USR1@58 "${allocation[@]}" \
  --output="$tmp/%j.out" "$root/scripts/slurm/train_2d.sbatch" "${long[@]}" --steps "$limit_steps") || fail "sbatch failed"
state=$(wait_job "$job" 150)
[[ $state == COMPLETED ]] || { cat "$tmp/$job.out"; fail "job $job ended $state"; }
restarts=$(slurm scontrol show job "$job" | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
((restarts >= 1)) || { cat "$tmp/$job.out"; fail "job $job was never stopped by its time limit's signal"; }
for ((run = 1; run <= restarts; run++)); do
  check=$(stopped "$job" "$run") || { echo "$check"; exit 1; }
done
grep 'continue with --resume' "$tmp/$job.out" | grep -v 'stopped by SIGUSR1' && fail "job $job was stopped by another signal"
(($(grep -c 'stopped by SIGUSR1' "$tmp/$job.out") == restarts)) || fail "job $job: not every stop was by SIGUSR1"
final=$(printf 'step_%06d' "$limit_steps")
same_checkpoint "$tmp/limit/$final" "$tmp/straight-limit/$final"
echo "time limit: job $job: $(grep -o 'stopped by SIGUSR1 after step [0-9]*' "$tmp/$job.out" | xargs -d '\n' | sed 's/ stopped/; stopped/g')," \
  "each exit code 75 and requeued; ran $((restarts + 1)) times, ended COMPLETED; cmp: its $final = the straight run's ($((SECONDS - t)) s)"
