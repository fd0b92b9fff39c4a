#!/usr/bin/env bash
# Robustness of the optimus command (DESIGN §11), one case per ctest test (label cli). A refusal
# case gives optimus one kind of bad input and checks what a user sees and what is left on disk:
# the command ends by itself (within 60 s) with a non-zero exit code; exactly one line of its output
# (stdout and stderr together, every rank under mpiexec) says "error:", and that line names the
# problem; and nothing was written — every file of the workspace (the data, an earlier run's
# checkpoints, the bad checkpoint itself) is byte-identical afterwards (sha256) and no file or
# folder has appeared (no half-written checkpoint, no new --out). Two cases check failures during a
# run instead: a NaN loss keeps the last good checkpoint, and a killed rank ends the whole job.
# Usage: run_case.sh CASE OPTIMUS MPIEXEC   (CASE: a function case_CASE below)
set -uo pipefail
name=$1 optimus=$2 mpiexec=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
ws=$tmp/ws

# The processes whose command line names this test's temporary folder: ours alone.
processes_of() { pgrep -f -- "$1" || true; }
cleanup() {
  local p
  for p in $(processes_of "$tmp"); do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

# ---- the workspace: a text file and a finished run with two step checkpoints ---------------------
mkdir "$ws"
yes 'the grid sums a row, then a column, then the ranks agree.' | head -c 20000 >"$ws/text.txt"
model=(--layers 1 --embd 32 --heads 2 --seq 16 --batch 4)
quiet=(--eval-batches 1 --progress lines --log-interval 0)
"$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --checkpoint-interval 2 --keep 0 --data "$ws/text.txt" \
  --out "$ws/run" >"$tmp/setup.log" 2>&1 || {
  cat "$tmp/setup.log"
  fail "the workspace's training run failed"
}
good=$ws/run/step_000004  # a good checkpoint to damage copies of
eval_args=(--data "$ws/text.txt" --batch 4 --seq 16 --batches 1)

# Every entry's type and path, then every file's sha256: equal before and after means nothing changed.
snapshot() { (cd "$ws" && find . -printf '%y %p\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

# fails_with PHRASE COMMAND...: COMMAND ends within 60 s, exits non-zero, and prints exactly one
# line with "error:", which contains PHRASE.
fails_with() {
  local phrase=$1 rc n
  shift
  echo "\$ $*"
  timeout 60 "$@" >"$tmp/out" 2>&1
  rc=$?
  cat "$tmp/out"
  echo "(exit code $rc)"
  ((rc != 124)) || fail "the command did not end within 60 s"
  ((rc != 0)) || fail "the command exited 0"
  n=$(grep -c 'error:' "$tmp/out")
  ((n == 1)) || fail "$n lines say 'error:'; expected exactly one"
  grep 'error:' "$tmp/out" | grep -qF -- "$phrase" || fail "the error line does not say '$phrase'"
}

# refused PHRASE COMMAND...: fails_with, and the workspace is exactly as it was.
refused() {
  local before
  before=$(snapshot)
  fails_with "$@"
  if [[ "$(snapshot)" != "$before" ]]; then
    diff <(echo "$before") <(snapshot)
    fail "the command changed the workspace (above: < before, > after)"
  fi
}

# A copy of the good checkpoint, to damage.
copy_of_good() {
  cp -r "$good" "$ws/$1"
  echo "$ws/$1"
}

# ---- data -----------------------------------------------------------------------------------------
case_data_missing() {
  refused "the data file '$ws/missing.txt' does not exist" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --data "$ws/missing.txt" --out "$ws/run"
}
case_data_folder() {
  refused "is a folder" "$optimus" train "${model[@]}" "${quiet[@]}" --data "$ws/run" --out "$ws/run"
}
case_data_empty() {
  : >"$ws/empty.txt"
  refused "is empty" "$optimus" train "${model[@]}" "${quiet[@]}" --data "$ws/empty.txt" --out "$ws/run"
}
case_data_too_short() {
  printf 'too short' >"$ws/short.txt"  # 9 bytes; --seq 16 needs windows of 17
  refused "has 9 bytes, too short for one training window of 17" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --data "$ws/short.txt" --out "$ws/run"
}
case_validation_too_short() {
  printf 'too short' >"$ws/short.txt"
  refused "has 9 bytes, but evaluating one batch of 4x16 tokens needs 65" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" --val "$ws/short.txt" --out "$ws/run"
}

# ---- the world against the layout (--out names a folder that must not appear) ------------------------
case_serial_on_2_ranks() {
  refused "the serial layout runs on 1 process, but the world has 2" \
    "$mpiexec" -np 2 "$optimus" train "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" --out "$ws/new_run"
}
case_2d_on_2_ranks() {
  refused "needs a square number of ranks (q×q), but the world has 2" \
    "$mpiexec" -np 2 "$optimus" train --layout 2d "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" --out "$ws/new_run"
}
case_2d_on_3_ranks() {
  refused "needs a square number of ranks (q×q), but the world has 3" \
    "$mpiexec" -np 3 "$optimus" train --layout 2d "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" --out "$ws/new_run"
}

# ---- dimensions the layout cannot split --------------------------------------------------------------
case_1d_heads_not_divisible() {
  refused "the 1D layout splits the heads over 3 ranks, but 2 is not divisible by 3" \
    "$mpiexec" -np 3 "$optimus" train --layout 1d "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" --out "$ws/new_run"
}
case_2d_heads_not_divisible() {
  refused "the 2D layout splits the heads over a grid side of q = 2, but 3 is not divisible by 2" \
    "$mpiexec" -np 4 "$optimus" train --layout 2d --layers 1 --embd 48 --heads 3 --seq 16 --batch 4 "${quiet[@]}" \
    --data "$ws/text.txt" --out "$ws/new_run"
}
case_2d_batch_not_divisible() {
  refused "--batch 3 is not divisible by 2" \
    "$mpiexec" -np 4 "$optimus" train --layout 2d --layers 1 --embd 32 --heads 2 --seq 16 --batch 3 "${quiet[@]}" \
    --data "$ws/text.txt" --out "$ws/new_run"
}

# ---- flags and values ---------------------------------------------------------------------------------
case_unknown_flag() {
  refused "--bogus" "$optimus" train "${model[@]}" "${quiet[@]}" --bogus 3 --data "$ws/text.txt" --out "$ws/run"
}
case_lr_not_a_number() {
  refused "--lr = abc" "$optimus" train "${model[@]}" "${quiet[@]}" --lr abc --data "$ws/text.txt" --out "$ws/run"
}
case_negative_lr() {
  refused "the learning rate (--lr) must be positive, but is -0.001" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --lr -1e-3 --data "$ws/text.txt" --out "$ws/run"
}
case_negative_steps() {
  refused "the number of steps (--steps) must be positive, but is -1" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps -1 --data "$ws/text.txt" --out "$ws/run"
}
case_dropout_out_of_range() {
  refused "(--dropout) must be in [0, 1), but is 1.5" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --dropout 1.5 --data "$ws/text.txt" --out "$ws/run"
}
case_config_unknown_key() {
  echo '{"layers": 1, "learning_rate": 0.001}' >"$ws/config.json"
  refused "has the key \"learning_rate\", which is not a flag of optimus train" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --config "$ws/config.json" --data "$ws/text.txt" --out "$ws/run"
}

# ---- checkpoints ------------------------------------------------------------------------------------
case_eval_missing_checkpoint() {
  refused "checkpoint directory $ws/run/step_000009 does not exist" \
    "$optimus" eval --checkpoint "$ws/run/step_000009" "${eval_args[@]}"
}
case_resume_missing_checkpoint() {
  refused "checkpoint directory $ws/run/step_000009 does not exist" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" --resume "$ws/run/step_000009" \
    --out "$ws/run"
}
case_corrupted_header() {
  local ckpt
  ckpt=$(copy_of_good corrupted)
  # Bytes 20-23 lie in the JSON header (which starts at byte 8); 0xff is never valid there.
  printf '\xff\xff\xff\xff' | dd of="$ckpt/model.safetensors" bs=1 seek=20 conv=notrunc status=none
  refused "has a header that is not valid JSON" \
    "$mpiexec" -np 2 "$optimus" eval --layout 1d --checkpoint "$ckpt" "${eval_args[@]}"
}
case_truncated_weights() {
  local ckpt
  ckpt=$(copy_of_good truncated)
  truncate -s 50000 "$ckpt/model.safetensors"
  refused "model.safetensors is truncated" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" --resume "$ckpt" --out "$ws/run"
}
case_truncated_train_state() {
  local ckpt
  ckpt=$(copy_of_good truncated)
  truncate -s 100000 "$ckpt/train_state.safetensors"
  refused "train_state.safetensors is truncated" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" --resume "$ckpt" --out "$ws/run"
}
case_mismatched_config() {
  local ckpt
  ckpt=$(copy_of_good mismatched)
  sed -i 's/"n_embd": 32,/"n_embd": 64,/' "$ckpt/config.json"
  grep -q '"n_embd": 64,' "$ckpt/config.json" || fail "could not change n_embd in $ckpt/config.json"
  refused "the weights and config.json do not belong together" \
    "$optimus" eval --checkpoint "$ckpt" "${eval_args[@]}"
}
case_resume_flags_differ() {
  refused "was trained with --lr 0.001 (this run has 0.002); resume with the flags of the run that wrote it" \
    "$mpiexec" -np 2 "$optimus" train --layout 1d "${model[@]}" "${quiet[@]}" --steps 4 --lr 2e-3 \
    --data "$ws/text.txt" --resume "$ws/run/step_000002" --out "$ws/run"
}

# ---- output ---------------------------------------------------------------------------------------
case_unwritable_out() {
  # As root, permission bits stop nothing; a folder below a regular file cannot be made by anyone.
  refused "cannot write the output folder $ws/text.txt/run" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" --out "$ws/text.txt/run"
}
case_init_over_checkpoint() {
  refused "already holds a checkpoint" "$optimus" init --layers 1 --embd 32 --heads 2 --seq 16 --out "$good"
}

# ---- failures during a run -------------------------------------------------------------------------
# Step 5's loss is NaN: training stops with one line; the checkpoints of steps 2 and 4 remain, byte
# for byte what a run without the NaN writes, and no later one (nor a temporary folder) exists.
case_nan_loss() {
  local flags=(train "${model[@]}" "${quiet[@]}" --steps 8 --checkpoint-interval 2 --keep 0 --data "$ws/text.txt")
  fails_with "the loss became nan at step 5; stopping (the last checkpoint in $ws/nan is kept)" \
    "$optimus" "${flags[@]}" --inject-nan-at-step 5 --out "$ws/nan"
  local left
  left=$(ls -A "$ws/nan" | tr '\n' ' ')
  [[ "$left" == "metrics.jsonl step_000002 step_000004 " ]] || fail "the run left '$left' in $ws/nan"
  # The same run with its NaN three steps later wrote step 4 too, then step 6.
  fails_with "at step 8" "$optimus" "${flags[@]}" --inject-nan-at-step 8 --out "$ws/later_nan"
  (cd "$ws/later_nan/step_000004" && sha256sum -- *) >"$tmp/reference.sha256"
  (cd "$ws/nan/step_000004" && sha256sum -c "$tmp/reference.sha256") || fail "step_000004 differs from a good run's"
  echo "\$ $optimus eval --checkpoint $ws/nan/step_000004 ${eval_args[*]}"
  timeout 60 "$optimus" eval --checkpoint "$ws/nan/step_000004" "${eval_args[@]}" >"$tmp/out" 2>&1 ||
    fail "optimus eval of the kept checkpoint failed: $(cat "$tmp/out")"
  cat "$tmp/out"
  grep -Eq '^loss [0-9]' "$tmp/out" || fail "optimus eval printed no finite loss"
}

# One rank of a 2D run on 4 is killed with SIGKILL while the others train: every process of the job
# (mpiexec included) must be gone within 60 s, and mpiexec must exit non-zero.
case_rank_killed() {
  local out=$ws/killed_run  # unique to this test: names its processes
  "$mpiexec" -np 4 "$optimus" train --layout 2d "${model[@]}" --steps 1000000 --eval-interval 0 --log-interval 1000 \
    --progress lines --data "$ws/text.txt" --out "$out" >"$tmp/out" 2>&1 &
  local job=$! i
  for ((i = 0; i < 600; ++i)); do
    grep -q '^step ' "$tmp/out" && break
    sleep 0.1
  done
  grep -q '^step ' "$tmp/out" || fail "the run did not start training within 60 s: $(cat "$tmp/out")"
  local ranks=() p
  for p in $(processes_of "$out"); do
    [[ "$(ps -o comm= -p "$p")" == optimus ]] && ranks+=("$p")
  done
  ((${#ranks[@]} == 4)) || fail "found ${#ranks[@]} optimus processes for $out, expected 4"
  echo "ranks' pids: ${ranks[*]}; killing ${ranks[1]} with SIGKILL"
  kill -KILL "${ranks[1]}"
  local start=$SECONDS
  while [[ -n "$(processes_of "$out")" ]] && ((SECONDS - start < 60)); do sleep 0.2; done
  local left
  left=$(processes_of "$out")
  [[ -z "$left" ]] || fail "60 s after the kill these processes remain: $(ps -o pid=,args= -p "${left//$'\n'/,}")"
  wait "$job"
  local rc=$?
  tail -n 8 "$tmp/out"
  echo "every process gone about $((SECONDS - start)) s after the kill; mpiexec exit code $rc"
  ((rc != 0)) || fail "mpiexec exited 0 after a rank was killed"
}

declare -F "case_$name" >/dev/null || fail "no case '$name'"
"case_$name"
echo "PASS: $name"
