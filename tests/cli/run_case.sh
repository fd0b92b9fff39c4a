#!/usr/bin/env bash
# Robustness of the optimus command, one case per ctest test (label cli). A refusal
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
  if mountpoint -q "$tmp/ws/full" 2>/dev/null; then umount "$tmp/ws/full"; fi  # the full-disk cases
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
case_sequence_parallel_not_1d() {
  refused "--sequence-parallel is a mode of the 1d layout, not of 2d" \
    "$mpiexec" -np 4 "$optimus" train --layout 2d --sequence-parallel "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" \
    --out "$ws/new_run"
}
case_sequence_parallel_tokens_not_divisible() {
  refused "the B·T = 16 tokens of a batch over the p = 3 ranks, but 16 is not divisible by 3" \
    "$mpiexec" -np 3 "$optimus" train --layout 1d --sequence-parallel --layers 1 --embd 24 --heads 3 --seq 16 \
    --batch 1 "${quiet[@]}" --data "$ws/text.txt" --out "$ws/new_run"
}
case_recompute_unknown() {
  refused "unknown --recompute 'selective'; choose none or block" \
    "$optimus" train --recompute selective "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" --out "$ws/new_run"
}
case_placement_unknown() {
  refused "--placement '2by2' is not a placement; give row-major, or RxC" \
    "$mpiexec" -np 4 "$optimus" train --layout 2d --placement 2by2 "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" \
    --out "$ws/new_run"
}
case_placement_not_2d() {
  refused "--placement 2x1 arranges the grid of the 2d layout, and 1d has none" \
    "$mpiexec" -np 2 "$optimus" train --layout 1d --placement 2x1 "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" \
    --out "$ws/new_run"
}
case_placement_not_tiling() {
  refused "--placement 3x3 cuts the 4×4 grid into blocks of 3×3 positions, but 4 is not a multiple of 3" \
    "$optimus" plan --layout 2d --ranks 16 --placement 3x3 --model tiny --batch 4
}
# The 3D layout's --placement: the cube's lines (depth, row, col), refused elsewhere and misspelt.
case_placement_3d_unknown() {
  refused "--placement 'diagonal' is not a placement; give row-major, or RxC for blocks of R grid rows by C grid columns per node (2d, e.g. 2x2), or depth, row or col for the line of the cube on consecutive ranks (3d)" \
    "$mpiexec" -np 8 "$optimus" train --layout 3d --placement diagonal "${model[@]}" "${quiet[@]}" \
    --data "$ws/text.txt" --out "$ws/new_run"
}
case_placement_line_not_3d() {
  refused "--placement row arranges the cube of the 3d layout, and 2d has none; use --placement row-major or --layout 3d" \
    "$mpiexec" -np 4 "$optimus" train --layout 2d --placement row "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" \
    --out "$ws/new_run"
}
case_placement_blocks_on_3d() {
  refused "--placement 2x2 arranges the grid of the 2d layout, and 3d has none; use --placement row-major or --layout 2d" \
    "$optimus" plan --layout 3d --ranks 64 --placement 2x2 --model tiny --batch 16
}
case_placement_line_bench_serial() {
  refused "--placement col arranges the cube of the 3d layout, and serial has none" \
    "$optimus" bench --placement col --steps 1
}
case_grad_accum_not_dividing() {
  refused "--grad-accum 3 must be 1 or more and divide --batch 4" \
    "$optimus" train --grad-accum 3 "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" --out "$ws/new_run"
}
case_grad_accum_micro_batch_2d() {
  refused "but the micro-batch (--batch 4 / --grad-accum 4 = 1) is not divisible by 2" \
    "$mpiexec" -np 4 "$optimus" train --layout 2d --grad-accum 4 --layers 1 --embd 32 --heads 2 --seq 16 --batch 4 \
    "${quiet[@]}" --data "$ws/text.txt" --out "$ws/new_run"
}
case_data_parallel_not_dividing() {
  refused "--data-parallel 3 must be 1 or more and divide the 4 processes" \
    "$mpiexec" -np 4 "$optimus" train --layout 1d --data-parallel 3 "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" \
    --out "$ws/new_run"
}
case_data_parallel_copy_not_square() {
  refused "needs a square number of ranks (q×q), but one model copy has 2 (4 processes / --data-parallel 2)" \
    "$mpiexec" -np 4 "$optimus" train --layout 2d --data-parallel 2 "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" \
    --out "$ws/new_run"
}
case_data_parallel_batch() {
  refused "--batch 4 must be a multiple of --data-parallel 4 x --grad-accum 2" \
    "$mpiexec" -np 4 "$optimus" train --data-parallel 4 --grad-accum 2 "${model[@]}" "${quiet[@]}" \
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
  refused "header is not valid JSON" \
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

# ---- data that some ranks cannot read, or that cannot fit -----------------------------------------
case_data_on_rank_0_only() {
  # Each rank reads text_<its rank>.txt: only rank 0's exists, as when a file is missing on one node.
  cp "$ws/text.txt" "$ws/text_0.txt"
  refused "on rank 1: the data file '$ws/text_1.txt' does not exist" \
    "$mpiexec" -np 2 bash -c "exec '$optimus' train --layout 1d ${model[*]} ${quiet[*]} \
      --data '$ws/text_'\$OMPI_COMM_WORLD_RANK.txt --out '$ws/new_run'"
}
case_data_stdin_on_2_ranks() {
  refused "is a pipe, which only one of the 2 processes can read" \
    bash -c "cat '$ws/text.txt' | '$mpiexec' -np 2 '$optimus' train --layout 1d ${model[*]} ${quiet[*]} \
      --data /dev/stdin --out '$ws/new_run'"
}
case_data_fifo_on_2_ranks() {
  mkfifo "$ws/fifo"
  refused "is a pipe, which only one of the 2 processes can read" \
    "$mpiexec" -np 2 "$optimus" train --layout 1d "${model[@]}" "${quiet[@]}" --data "$ws/fifo" --out "$ws/new_run"
}
case_data_device() {
  refused "the data file '/dev/zero' is not a regular file or a pipe" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --data /dev/zero --out "$ws/new_run"
}
case_data_17_bytes() {
  # 17 bytes hold one window of --seq 16, but the training part (the first 90%) holds 16.
  head -c 17 "$ws/text.txt" >"$ws/short.txt"
  refused "the first 90% of the data file '$ws/short.txt' has 16 bytes, too short for one training window of 17" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --data "$ws/short.txt" --out "$ws/new_run"
}
case_batch_past_memory() {
  refused "training this model at --batch 10000000 needs at least" \
    "$optimus" train --layers 1 --embd 32 --heads 2 --seq 16 --batch 10000000 "${quiet[@]}" --data "$ws/text.txt" \
    --out "$ws/new_run"
}
case_layers_past_memory() {
  refused "training this model at --batch 4 needs at least" \
    "$optimus" train --layers 100000 --embd 512 --heads 2 --seq 16 --batch 4 "${quiet[@]}" --data "$ws/text.txt" \
    --out "$ws/new_run"
}

# ---- the output folder ---------------------------------------------------------------------------------
case_out_holds_earlier_run() {
  # A fresh run (here one that would diverge at once) must not touch an earlier run's files.
  refused "--out $ws/run holds an earlier run" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --lr 1e30 --data "$ws/text.txt" --out "$ws/run"
}
case_refused_resume_makes_no_out() {
  refused "was trained with --seed 1337, but this run has --seed 5" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --seed 5 --data "$ws/text.txt" --resume "$good" --out "$ws/new_run"
}
case_init_over_lone_config() {
  mkdir "$ws/lone" && echo '{}' >"$ws/lone/config.json"
  refused "--out $ws/lone already holds a checkpoint (config.json)" \
    "$optimus" init --layers 1 --embd 32 --heads 2 --seq 16 --out "$ws/lone"
}

# ---- config files --------------------------------------------------------------------------------------
case_config_folder() {
  refused "the --config file $ws/run is not a regular file" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --config "$ws/run" --data "$ws/text.txt" --out "$ws/new_run"
}
# config_refused PHRASE: a train run with $ws/config.json as --config is refused with PHRASE.
config_refused() {
  refused "$1" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --config "$ws/config.json" --data "$ws/text.txt" --out "$ws/new_run"
}
case_config_number_overflow() {
  echo '{"lr": 1e400}' >"$ws/config.json"
  config_refused "holds a number out of range"
}
case_config_deeply_nested() {
  /usr/bin/python3 -c "print('{\"lr\": ' + '[' * 100000 + ']' * 100000 + '}')" >"$ws/config.json"
  config_refused "nests arrays or objects deeper than 32 levels"
}
case_config_duplicate_key() {
  echo '{"lr": 0.001, "lr": 0.002}' >"$ws/config.json"
  config_refused "has the key \"lr\" twice in one object"
}
case_config_huge_value() {
  # A 50 MB value: refused by size, and no error line echoes it.
  /usr/bin/python3 -c "print('{\"layout\": \"' + 'x' * 50000000 + '\"}')" >"$ws/config.json"
  config_refused "is larger than the 1024 KiB such a file can be"
  (($(wc -c <"$tmp/out") < 2000)) || fail "the output is $(wc -c <"$tmp/out") bytes long"
}
case_lr_past_float() {
  refused "must be positive, but is inf (past a float's largest value, 3.4e38)" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --lr 1e40 --data "$ws/text.txt" --out "$ws/new_run"
}
case_unknown_subcommand() {
  refused "'generate' is not a subcommand of optimus" "$optimus" generate --tokens 5
}

# ---- checkpoints that do not hold what they claim --------------------------------------------------
# set_config KEY VALUE CKPT: config.json's KEY becomes VALUE (JSON text).
set_config() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
key, value, ckpt = sys.argv[1:4]
path = ckpt + "/config.json"
cfg = json.load(open(path))
cfg[key] = json.loads(value)
open(path, "w").write(json.dumps(cfg))
PY
}
# set_state_metadata KEY VALUE CKPT: train_state.safetensors' metadata KEY becomes the string VALUE.
set_state_metadata() {
  /usr/bin/python3 - "$@" <<'PY'
import json, struct, sys
key, value, ckpt = sys.argv[1:4]
path = ckpt + "/train_state.safetensors"
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
header["__metadata__"][key] = value
text = json.dumps(header).encode()
text += b" " * ((8 - len(text) % 8) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
}
# checkpoint_past_memory KEY VALUE: eval of a checkpoint whose config.json's KEY is VALUE is refused
# by the memory check, before the model is allocated.
checkpoint_past_memory() {
  local ckpt
  ckpt=$(copy_of_good "big_$1")
  set_config "$1" "$2" "$ckpt"
  # The formula's screen ("needs at least") or, past it, the pass measured on meta ("needs … more").
  refused "parameters) at --batch 4 needs" "$optimus" eval --checkpoint "$ckpt" "${eval_args[@]}"
}
case_config_n_embd_past_memory() { checkpoint_past_memory n_embd 1048576; }
case_config_n_positions_past_memory() { checkpoint_past_memory n_positions 268435456; }
case_config_vocab_past_memory() { checkpoint_past_memory vocab_size 2147483647; }
case_config_vocab_out_of_range() {
  local ckpt
  ckpt=$(copy_of_good vocab)
  set_config vocab_size 2147483648 "$ckpt"
  refused "\"vocab_size\": 2147483648, which is out of range (at most 2147483647)" \
    "$optimus" eval --checkpoint "$ckpt" "${eval_args[@]}"
}
case_config_deeply_nested_checkpoint() {
  local ckpt
  ckpt=$(copy_of_good nested)
  /usr/bin/python3 -c "print('{\"x\": ' + '[' * 100000 + ']' * 100000 + '}')" >"$ckpt/config.json"
  refused "nests arrays or objects deeper than 32 levels" "$optimus" eval --checkpoint "$ckpt" "${eval_args[@]}"
}
case_weights_padded_to_20_gb() {
  # A sparse 20 GB file, outside the workspace (whose snapshot would read it): refused by its size alone.
  cp -r "$good" "$tmp/padded"
  truncate -s 20G "$tmp/padded/model.safetensors"
  fails_with "bytes of trailing data after its last tensor" "$optimus" eval --checkpoint "$tmp/padded" "${eval_args[@]}"
}
case_weight_not_finite() {
  local ckpt
  ckpt=$(copy_of_good nan_weight)
  /usr/bin/python3 - "$ckpt/model.safetensors" <<'PY'
import struct, sys
raw = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
raw[8 + n:8 + n + 4] = struct.pack("<f", float("inf"))  # the first element of the first tensor
open(sys.argv[1], "wb").write(raw)
PY
  refused "holds inf at element 0; a checkpoint's values must be finite" \
    "$optimus" eval --checkpoint "$ckpt" "${eval_args[@]}"
}
case_state_seed_not_a_number() {
  local ckpt
  ckpt=$(copy_of_good seed_abc)
  set_state_metadata seed abc "$ckpt"
  refused "has a bad 'seed' entry 'abc'" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" --resume "$ckpt" --out "$ws/new_run"
}
case_state_symlink_loop() {
  local ckpt
  ckpt=$(copy_of_good loop)
  rm "$ckpt/train_state.safetensors"
  ln -s train_state.safetensors "$ckpt/train_state.safetensors"
  refused "Too many levels of symbolic links" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" --resume "$ckpt" --out "$ws/new_run"
}
case_state_step_past_steps() {
  local ckpt
  ckpt=$(copy_of_good step_100)
  set_state_metadata step 100 "$ckpt"
  refused "says it is at step 100, but a run of --steps 4 resumes from a step in [0, 4)" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" --resume "$ckpt" --out "$ws/new_run"
}
case_state_step_negative() {
  local ckpt
  ckpt=$(copy_of_good step_minus_3)
  set_state_metadata step -3 "$ckpt"
  refused "has a bad 'step' entry '-3'" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" --resume "$ckpt" --out "$ws/new_run"
}

# ---- sample and bench values ---------------------------------------------------------------------------
case_sample_negative_tokens() {
  refused "--tokens must be 0 or more, but is -5" "$optimus" sample --checkpoint "$good" --tokens -5
}
case_sample_negative_top_k() {
  refused "--top-k must be 0 (the whole vocabulary) or more, but is -1" "$optimus" sample --checkpoint "$good" --top-k -1
}
case_bench_zero_steps() {
  refused "--steps must be positive" "$optimus" bench --steps 0
}
case_bench_negative_warmup() {
  refused "--warmup must be 0 or more, but is -3" "$optimus" bench --warmup -3
}
case_bench_negative_batch() {
  refused "--batch must be positive, but is -4" "$optimus" bench --batch -4
}
case_bench_zero_batch() {
  refused "--batch must be positive, but is 0" "$optimus" bench --batch 0
}
case_bench_budget_past_range() {
  refused "--max-batch-budget must be at most 2^30 MiB (a pebibyte), but is 1e+308" \
    "$optimus" bench --max-batch-budget 1e308
}
case_bench_budget_past_memory() {
  refused "--max-batch-budget 1e+06 needs at least" "$optimus" bench --max-batch-budget 1000000
}
case_bench_data_parallel_not_dividing() {
  refused "--data-parallel 3 must be 1 or more and divide the 2 processes" \
    "$mpiexec" -np 2 "$optimus" bench --data-parallel 3 --steps 1 --warmup 0
}
case_bench_data_parallel_copy_not_square() {
  refused "needs a square number of ranks (q×q), but one model copy has 2 (4 processes / --data-parallel 2)" \
    "$mpiexec" -np 4 "$optimus" bench --layout 2d --data-parallel 2 --steps 1 --warmup 0
}
case_bench_data_parallel_batch() {
  refused "--batch 6 must be a multiple of --data-parallel 2 x --grad-accum 2" \
    "$mpiexec" -np 2 "$optimus" bench --data-parallel 2 --grad-accum 2 --batch 6 --steps 1 --warmup 0
}
case_bench_data_parallel_budget() {
  refused "--max-batch-budget searches the batch of one model copy in one pass" \
    "$mpiexec" -np 2 "$optimus" bench --data-parallel 2 --max-batch-budget 100
}

# ---- plan's time model ---------------------------------------------------------------------------------
case_plan_unknown_hardware() {
  refused "no hardware profile named 'cray-1' in" "$optimus" plan --model tiny --hardware cray-1
}
case_plan_hardware_not_json() {
  refused "hardware profile $ws/text.txt is not valid JSON" "$optimus" plan --model tiny --hardware "$ws/text.txt"
}
case_plan_hardware_field_missing() {
  echo '{"name": "half", "devices_per_node": {"value": 4, "source": "a test"}}' >"$ws/half.json"
  refused "device_memory_bytes is missing" "$optimus" plan --model tiny --hardware "$ws/half.json"
}
case_plan_data_parallel_batch() {
  refused "--batch 3 must be a multiple of --data-parallel 2" "$optimus" plan --model tiny --data-parallel 2 --batch 3
}
case_plan_zero_threads() {
  refused "--threads must be 1 or more, but is 0" "$optimus" plan --model tiny --hardware local --threads 0
}
case_init_from_embd_differs() {
  refused "--embd 64 does not match n_embd 32 of --init-from $good; give 32 or omit it" \
    "$mpiexec" -np 2 "$optimus" train --layout 1d --init-from "$good" --embd 64 "${quiet[@]}" --steps 2 \
    --data "$ws/text.txt" --out "$ws/new_run"
}
case_init_from_seq_too_long() {
  refused "--seq 32 exceeds n_positions 16 of --init-from $good; use --seq 16 or less" \
    "$optimus" train --init-from "$good" --seq 32 "${quiet[@]}" --steps 2 --data "$ws/text.txt" --out "$ws/new_run"
}
# token_file PATH COUNT [CUT]: a token file (text/token_file.h) of COUNT uint16 ids below 300, its
# last CUT bytes cut off.
token_file() {
  /usr/bin/python3 -c "
import struct, sys
path, n, cut = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = b'OPTMTOKN' + struct.pack('<IIQQI', 1, 2, n, 3 * n, 300).ljust(56, b'\0')
data += struct.pack(f'<{n}H', *[(7 * i) % 300 for i in range(n)])
open(path, 'wb').write(data[:len(data) - cut])" "$1" "$2" "${3:-0}"
}
case_token_file_truncated() {
  token_file "$ws/cut.tok" 5000 3
  refused "the token file '$ws/cut.tok' says it holds 5000 tokens, but has 9997 bytes of them (truncated?)" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 2 --data "$ws/cut.tok" --out "$ws/new_run"
}
case_token_data_text_val() {
  token_file "$ws/train.tok" 5000
  refused "--data is a token file but --val is text; give both from the same tokenizer" \
    "$mpiexec" -np 2 "$optimus" train --layout 1d "${model[@]}" "${quiet[@]}" --steps 2 --data "$ws/train.tok" \
    --val "$ws/text.txt" --out "$ws/new_run"
}
case_token_vocab_past_init_from() {
  token_file "$ws/train.tok" 5000
  refused "the first 90% of the data file '$ws/train.tok' holds ids up to 299 (a vocabulary of 300), past the \
vocabulary of 256 of --init-from $good" \
    "$optimus" train --init-from "$good" "${quiet[@]}" --steps 2 --data "$ws/train.tok" --out "$ws/new_run"
}
case_tokenize_missing_tokenizer() {
  refused "the tokenizer folder $ws/nowhere has no vocab.json; give a folder with vocab.json and merges.txt" \
    "$optimus" tokenize --tokenizer "$ws/nowhere" --input "$ws/text.txt" --out "$ws/tokens"
}
case_resume_weights_only() {
  local ckpt
  ckpt=$(copy_of_good weights_only)
  rm "$ckpt/train_state.safetensors"
  refused "it holds weights only); start a new run from its weights with --init-from $ckpt" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" --resume "$ckpt" --out "$ws/new_run"
}

# ---- tokenizer folders, --init-from and --resume, messages ------------------------------------------
# small_tokenizer DIR: a byte-level BPE tokenizer of 261 tokens (the 256 byte characters, then "he",
# "Ġt", "Ġthe", "the", "<|endoftext|>") and 4 merges, as vocab.json and merges.txt in DIR.
small_tokenizer() {
  mkdir -p "$1"
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or b >= 174]
chars, extra = {}, 256
for b in range(256):
    chars[b] = chr(b) if b in printable else chr(extra)
    extra += b not in printable
vocab = {chars[b]: b for b in range(256)}
G = chars[32]
for token in ["he", G + "t", G + "the", "the", "<|endoftext|>"]:
    vocab[token] = len(vocab)
json.dump(vocab, open(sys.argv[1] + "/vocab.json", "w", encoding="utf-8"), ensure_ascii=False)
open(sys.argv[1] + "/merges.txt", "w", encoding="utf-8").write(f"#version: 0.2\nh e\n{G} t\n{G}t he\nt he\n")
PY
}
# tokenized DIR: the workspace's text tokenized into DIR with the small tokenizer (in DIR.tokenizer).
tokenized() {
  small_tokenizer "$1.tokenizer"
  "$optimus" tokenize --tokenizer "$1.tokenizer" --input "$ws/text.txt" --out "$1" >/dev/null ||
    fail "optimus tokenize into $1 failed"
}
case_tokenize_full_disk() {
  # A 64 KiB file system (tmpfs, as root) holding an earlier tokenization; the new one does not fit.
  mkdir "$ws/full"
  if ! mount -t tmpfs -o size=64k tmpfs "$ws/full" 2>/dev/null; then
    echo "SKIP: cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN)"
    exit 77
  fi
  small_tokenizer "$tmp/tokenizer"
  head -c 2000 "$ws/text.txt" >"$tmp/short.txt"
  "$optimus" tokenize --tokenizer "$tmp/tokenizer" --input "$tmp/short.txt" --out "$ws/full/tokens" >/dev/null ||
    fail "the first tokenize failed"
  yes 'a grid of ranks, each its own block; q steps of broadcasts.' | head -c 300000 >"$tmp/long.txt"
  refused "cannot write $ws/full/tokens/train.tok: the disk is full (no space left on device)" \
    "$optimus" tokenize --tokenizer "$tmp/tokenizer" --input "$tmp/long.txt" --out "$ws/full/tokens"
  ls -A "$ws/full/tokens"
}
case_tokenizer_folder_mismatch() {
  tokenized "$ws/tokens"
  sed -i '$d' "$ws/tokens/merges.txt"  # one merge fewer: the folder's files no longer belong together
  refused "the token file '$ws/tokens/train.tok' was written with a tokenizer of 4 merges, but $ws/tokens/merges.txt \
has 3" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 2 --data "$ws/tokens" --out "$ws/new_run"
}
case_init_from_tokenizer_text_data() {
  local ckpt
  ckpt=$(bpe_checkpoint)
  without_fingerprint "$ckpt"  # as written before checkpoints recorded it: its tokenizer files tell
  refused "--data $ws/text.txt is text (tokenizer bytes), but --init-from $ckpt was trained on tokenizer \
$(fingerprint "$ws/a.tokenizer"); tokenize the text with that tokenizer (optimus tokenize --tokenizer $ckpt --input \
$ws/text.txt --out FOLDER)" \
    "$optimus" train --init-from "$ckpt" "${quiet[@]}" --steps 2 --data "$ws/text.txt" --out "$ws/new_run"
}
case_init_from_with_resume() {
  refused "--init-from starts a new run from a checkpoint's weights and --resume continues the run that wrote one" \
    "$optimus" train --init-from "$good" --resume "$good" "${quiet[@]}" --steps 4 --data "$ws/text.txt" \
    --out "$ws/new_run"
}
case_resume_grad_accum_differs() {
  refused "was trained with --grad-accum 1 (this run has 2); resume with the flags of the run that wrote it" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --grad-accum 2 --data "$ws/text.txt" \
    --resume "$ws/run/step_000002" --out "$ws/run"
}
case_missing_file_no_checkpoint_hint() {
  small_tokenizer "$ws/tokenizer"
  refused "the --config file $ws/nowhere.json does not exist; check the path" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --config "$ws/nowhere.json" --data "$ws/text.txt" --out "$ws/new_run"
  ! grep -q checkpoint "$tmp/out" || fail "the message for a missing --config speaks of checkpoints"
  refused "the input file $ws/nowhere.txt does not exist; check the path" \
    "$optimus" tokenize --tokenizer "$ws/tokenizer" --input "$ws/nowhere.txt" --out "$ws/tokens"
  ! grep -q checkpoint "$tmp/out" || fail "the message for a missing --input speaks of checkpoints"
}
case_bench_budget_negative() {
  refused "--max-batch-budget must be 0 or more (0: time steps instead), but is -5" \
    "$optimus" bench --max-batch-budget -5
  (($(wc -c <"$tmp/out") < 300)) || fail "the output is $(wc -c <"$tmp/out") bytes long"
}
case_bench_op_times_cuda() {
  refused "--op-times times the CPU's ops; it takes --device cpu" "$optimus" bench --op-times --device cuda
}
case_config_test_only_switch() {
  echo '{"inject-nan-at-step": 1}' >"$ws/config.json"
  config_refused "has the key \"inject-nan-at-step\", which is not a flag of optimus train"
}
case_plan_zero_ranks_per_node() {
  refused "--ranks-per-node must be 1 or more, but is 0" "$optimus" plan --model tiny --hardware local --ranks-per-node 0
}
case_nan_at_step_1_leaves_no_out() {
  refused "the loss became nan at step 1; stopping (no checkpoint was written)" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --inject-nan-at-step 1 --data "$ws/text.txt" --out "$ws/new_run"
}

# ---- limits on memory and address space -----------------------------------------------------------
# "${under_ulimit[@]}" KIB COMMAND...: COMMAND with its address space limited to KIB KiB (ulimit -v).
# shellcheck disable=SC2016  # $1 and $@ are the inner bash's
under_ulimit=(bash -c 'ulimit -v "$1" && shift && exec "$@"' _)
case_layers_past_address_space() {
  # About 3 GiB to train (200 M parameters): within the memory of any machine this suite runs on, past 1.5 GiB of address space.
  refused "but the address-space limit (ulimit -v) leaves this process only" \
    "${under_ulimit[@]}" 1572864 "$optimus" train --layers 64 --embd 512 --heads 8 --seq 16 --batch 4 "${quiet[@]}" \
    --data "$ws/text.txt" --out "$ws/new_run"
}
case_step_past_address_space() {
  # A step of 3.6 GiB, measured on the meta device, past what 3.5 GiB of address space leaves once the
  # libraries are mapped (the lower-bound screen, 1.7 GiB, lets it through to the exact check).
  refused "training this model at --batch 8000 needs" \
    "${under_ulimit[@]}" 3670016 "$optimus" train --layers 1 --embd 32 --heads 2 --seq 64 --batch 8000 "${quiet[@]}" \
    --data "$ws/text.txt" --out "$ws/new_run"
  grep -q "more per process for its training step (its peak on the meta device, beside the .* the process holds now), but the address-space limit (ulimit -v) leaves this process only" "$tmp/out" ||
    fail "the error does not name the step's need against the address-space limit"
}
case_address_space_below_start() {
  # 300000 KiB is below what any build needs to start; a CUDA build's libraries alone take more (the
  # loader would refuse it before optimus runs), so it gets the 1 GiB under which it used to spin.
  local kib=300000
  if ldd "$optimus" | grep libcublas >/dev/null; then kib=1048576; fi  # (grep -q would cut ldd off: pipefail)
  refused "optimus needs an address space of at least" \
    "${under_ulimit[@]}" "$kib" env OPENBLAS_NUM_THREADS=1 "$optimus" --help
}
# 2^24 layers, the most a model may have: 8 KiB each is 128 GiB, past the machine's memory or the 8 GiB
# of address space the case allows it.
case_plan_layers_past_memory() {
  refused "planning 16777216 layers at --batch 1 needs at least 128 GiB per process" \
    "${under_ulimit[@]}" 8388608 "$optimus" plan --layers 16777216
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

# A checkpoint that does not fit on its disk (a 64 KiB tmpfs, as root), 2d on 4 ranks: rank 0's
# write fails part-way through the tensors while every rank is still gathering them; all ranks end
# within 60 s with one sentence, and no half-written checkpoint is left.
case_checkpoint_full_disk() {
  mkdir "$ws/full"
  if ! mount -t tmpfs -o size=64k tmpfs "$ws/full" 2>/dev/null; then
    echo "SKIP: cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN)"
    exit 77
  fi
  fails_with "cannot write $ws/full/run/.tmp_step_000002/model.safetensors: the disk is full" \
    "$mpiexec" -np 4 "$optimus" train --layout 2d "${model[@]}" "${quiet[@]}" --steps 2 --data "$ws/text.txt" \
    --out "$ws/full/run"
  local left
  left=$(ls -A "$ws/full/run" | tr '\n' ' ')
  [[ "$left" == "metrics.jsonl " ]] || fail "the run left '$left' in $ws/full/run"
}

# Step 3's gradient norm is NaN while its loss is finite: the step is refused before the update,
# with one line, and the checkpoint of step 2 remains, byte for byte what a run without the NaN writes.
case_nan_gradient() {
  local flags=(train --layout 1d "${model[@]}" "${quiet[@]}" --steps 6 --checkpoint-interval 2 --keep 0
    --data "$ws/text.txt")
  fails_with "the gradient norm became nan at step 3 (the loss was finite); stopping before the update" \
    "$mpiexec" -np 2 "$optimus" "${flags[@]}" --inject-nan-at-step 3 --inject-nan-into gradient --out "$ws/nan_grad"
  local left
  left=$(ls -A "$ws/nan_grad" | tr '\n' ' ')
  [[ "$left" == "metrics.jsonl step_000002 " ]] || fail "the run left '$left' in $ws/nan_grad"
  "$mpiexec" -np 2 "$optimus" "${flags[@]}" --out "$ws/no_nan" >/dev/null 2>&1 || fail "the clean run failed"
  (cd "$ws/no_nan/step_000002" && sha256sum -- *) >"$tmp/reference.sha256"
  (cd "$ws/nan_grad/step_000002" && sha256sum -c "$tmp/reference.sha256") || fail "step_000002 differs"
}

# A resumed run with --keep 1 prunes only older checkpoints: never the one it just wrote, nor a folder
# numbered above it; and a temporary folder a killed run left behind is removed when the run starts.
case_prune_keeps_own() {
  local run=$ws/prune
  "$optimus" train "${model[@]}" "${quiet[@]}" --steps 8 --checkpoint-interval 2 --keep 0 --data "$ws/text.txt" \
    --out "$run" >/dev/null 2>&1 || fail "the first run failed"
  rm -r "$run/step_000006" "$run/step_000008"
  cp -r "$run/step_000004" "$run/step_000010"  # a folder numbered above the run's last step
  mkdir "$run/.tmp_step_000006" && echo partial >"$run/.tmp_step_000006/model.safetensors"
  "$optimus" train "${model[@]}" "${quiet[@]}" --steps 8 --checkpoint-interval 2 --keep 1 --data "$ws/text.txt" \
    --resume "$run/step_000004" --out "$run" >"$tmp/out" 2>&1 || fail "the resumed run failed: $(cat "$tmp/out")"
  local left
  left=$(ls -A "$run" | tr '\n' ' ')
  echo "left in the folder: $left"
  [[ "$left" == "metrics.jsonl step_000008 step_000010 " ]] || fail "expected metrics.jsonl step_000008 step_000010"
}

# plan --hardware under a 6 GiB address space: the meta device's buffers take none, so the plan and
# its search for the largest batch (which tries up to the profile's 12 GiB per device) run as without it.
case_plan_hardware_under_ulimit() {
  echo "\$ ulimit -v 6291456; $optimus plan --model tiny --hardware local"
  timeout 60 "${under_ulimit[@]}" 6291456 "$optimus" plan --model tiny --hardware local >"$tmp/out" 2>&1
  local rc=$?
  tail -n 3 "$tmp/out"
  ((rc == 0)) || fail "plan exited $rc under ulimit -v 6291456"
  grep -Eq '^largest batch that fits .* per device: [0-9]+$' "$tmp/out" || fail "plan printed no largest batch"
}

# A stop signal that arrives after the last step, while the finished run samples its text: the
# run still ends normally (exit 0), since the handlers stay until the process ends. The run is a
# rank under mpiexec (a process started alone has other handlers to go back to); SIGUSR1 goes to
# it from the last step's checkpoint line on, every 50 ms, until it has gone.
case_signal_after_last_step() {
  local out=$ws/signalled  # unique to this test: names its processes
  "$mpiexec" -np 1 "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --sample 2000 --data "$ws/text.txt" \
    --out "$out" >"$tmp/out" 2>&1 &
  local job=$! rank="" sent=0 i p
  for ((i = 0; i < 1200; ++i)); do
    grep -q 'step     4/4 | checkpoint saved' "$tmp/out" && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.05
  done
  for p in $(processes_of "$out"); do
    [[ "$(ps -o comm= -p "$p")" == optimus ]] && rank=$p
  done
  [[ -n $rank ]] || fail "no optimus rank for $out once its last step was saved"
  while kill -USR1 "$rank" 2>/dev/null; do  # the rank is mpiexec's child, not ours: no zombie stays
    sent=$((sent + 1))
    sleep 0.05
  done
  wait "$job"
  local rc=$?
  tail -n 3 "$tmp/out"
  echo "SIGUSR1 sent $sent times to the rank after the last step; mpiexec's exit code $rc"
  ((sent > 0)) || fail "the run ended before a signal could be sent"
  ((rc == 0)) || fail "the finished run exited $rc, not 0"
  grep -q '^sample:' "$tmp/out" || fail "the run printed no sample"
}

# The Slurm script (scripts/slurm/train_2d.sbatch) outside Slurm, with its mpirun launcher on one
# rank and a stand-in scontrol that records its arguments: SIGTERM to mpirun (what kill, timeout and
# scancel send) stops the run at the end of a step with its checkpoint; mpirun exits 1, the script
# reads optimus's stop line, exits 75 and requeues the job.
case_slurm_term_to_mpirun() {
  local out=$ws/slurm_run bin=$tmp/bin
  mkdir -p "$bin"
  printf '#!/bin/sh\necho "$*" >>"%s"\n' "$tmp/scontrol.calls" >"$bin/scontrol"
  chmod +x "$bin/scontrol"
  PATH=$bin:$PATH SLURM_NTASKS=1 SLURM_NTASKS_PER_NODE=1 SLURM_CPUS_PER_TASK=1 SLURM_JOB_ID=4242 \
    OPTIMUS=$optimus DATA=$ws/text.txt VAL=$ws/text.txt OUT=$out LAUNCHER=mpirun \
    bash "$(dirname "$0")/../../scripts/slurm/train_2d.sbatch" "${model[@]}" --steps 1000000 --eval-interval 0 \
    --eval-batches 1 --log-interval 100 --progress lines >"$tmp/job" 2>&1 &
  local job=$!
  wait_for_training "$tmp/job"
  local launcher
  launcher=$(pgrep -P "$job" -x mpirun) || fail "no mpirun under the script"
  kill -TERM "$launcher"
  wait "$job"
  local rc=$?
  tail -n 4 "$tmp/job"
  echo "the script's exit code: $rc; scontrol was called with: $(cat "$tmp/scontrol.calls" 2>/dev/null)"
  grep -q '(exit code 75)$' "$tmp/job" || fail "optimus printed no stop line"
  ((rc == 75)) || fail "the script exited $rc, not 75"
  [[ "$(cat "$tmp/scontrol.calls")" == "requeue 4242" ]] || fail "the script did not requeue the job"
}

# wait_for_training LOG: waits until a run started in the background logs its first step (60 s at most).
wait_for_training() {
  local i
  for ((i = 0; i < 600; ++i)); do
    grep -q '^step ' "$1" && return
    sleep 0.1
  done
  fail "the run did not start training within 60 s: $(cat "$1")"
}

# Two runs into one --out at once: the second is refused while the first holds the folder.
case_two_runs_one_out() {
  local run=$ws/busy
  "$optimus" train "${model[@]}" --steps 1000000 --eval-interval 0 --log-interval 1 --progress lines \
    --data "$ws/text.txt" --out "$run" >"$tmp/first" 2>&1 &
  local first=$!
  wait_for_training "$tmp/first"
  fails_with "another optimus train is writing into --out $run" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --overwrite --data "$ws/text.txt" --out "$run"
  kill "$first"
  wait "$first" 2>/dev/null
  [[ -f "$run/metrics.jsonl" ]] || fail "the first run's metrics.jsonl is gone"
}

# One rank of a 2D run on 4 is killed with SIGKILL while the others train: every process of the job
# (mpiexec included) must be gone within 60 s, and mpiexec must exit non-zero.
case_rank_killed() {
  local out=$ws/killed_run  # unique to this test: names its processes
  "$mpiexec" -np 4 "$optimus" train --layout 2d "${model[@]}" --steps 1000000 --eval-interval 0 --log-interval 1000 \
    --progress lines --data "$ws/text.txt" --out "$out" >"$tmp/out" 2>&1 &
  local job=$!
  wait_for_training "$tmp/out"
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

# The tokenizer of a --data folder is removed while the run trains: the checkpoint written after that
# (here on SIGUSR1, pre-emption's signal) still holds it, as read and checked when the run started.
case_tokenizer_removed_mid_run() {
  tokenized "$ws/tokens"
  cp "$ws/tokens/vocab.json" "$tmp/vocab.json"
  "$optimus" train "${model[@]}" --steps 1000000 --eval-interval 0 --log-interval 1 --progress lines \
    --data "$ws/tokens" --out "$ws/tok_run" >"$tmp/run.log" 2>&1 &
  local run=$!
  wait_for_training "$tmp/run.log"
  rm "$ws/tokens/vocab.json"
  kill -0 "$run" 2>/dev/null || fail "the run ended before vocab.json was removed: $(cat "$tmp/run.log")"
  kill -USR1 "$run"
  wait "$run"
  local rc=$?
  tail -n 2 "$tmp/run.log"
  ((rc == 75)) || fail "the run exited $rc, not 75 (stopped with a checkpoint)"
  ! grep -q 'error:' "$tmp/run.log" || fail "the run printed an error"
  local ckpt
  ckpt=$(ls -d "$ws"/tok_run/step_* | tail -n 1)
  cmp "$tmp/vocab.json" "$ckpt/vocab.json" || fail "$ckpt/vocab.json is not the tokenizer's"
  echo "$ckpt holds the tokenizer's vocab.json, removed from $ws/tokens during the run"
}

# --overlap where it has nothing to hide (serial, --data-parallel 1): a note on stderr, and the
# command does what it would without it.
case_overlap_does_nothing() {
  local phrase="note: --overlap changes nothing in this run (--layout serial, --data-parallel 1)"
  "$optimus" plan --model tiny --overlap --json >"$tmp/plan.json" 2>"$tmp/plan.err" || fail "plan --overlap failed"
  cat "$tmp/plan.err"
  grep -qF -- "$phrase" "$tmp/plan.err" || fail "plan printed no note"
  /usr/bin/python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$tmp/plan.json" ||
    fail "plan's stdout is not JSON"
  "$optimus" train "${model[@]}" "${quiet[@]}" --overlap --steps 2 --data "$ws/text.txt" --out "$ws/overlap" \
    >"$tmp/out" 2>&1 || fail "train --overlap failed: $(cat "$tmp/out")"
  grep -F -- "$phrase" "$tmp/out" || fail "train printed no note"
}

# Resuming a run of --data-parallel 1 with --data-parallel 2 goes on, and says it is not bitwise.
case_resume_data_parallel_differs() {
  "$mpiexec" -np 2 "$optimus" train --data-parallel 2 "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" \
    --resume "$ws/run/step_000002" --out "$ws/dp_run" >"$tmp/out" 2>&1 ||
    fail "the resumed run failed: $(cat "$tmp/out")"
  grep -F "was trained with --data-parallel 1 and this run has 2; the run continues" "$tmp/out" ||
    fail "no note on the changed --data-parallel: $(cat "$tmp/out")"
  grep -F "not bitwise" "$tmp/out" >/dev/null || fail "the note does not say the run is not bitwise"
}

# ---- stop signals during a sample, the schedule, long values ------------------------------------------
# signal_mid_sample SIGNAL MARKER COMMAND...: runs COMMAND in the background (stdout to $tmp/sample,
# stderr to $tmp/sample.err) under job control, so that it keeps SIGINT (a script's background job
# ignores it); waits until $tmp/sample holds MARKER and 200 bytes after it (so the sample is under
# way: the signal lands mid-sample; 120 s at most), sends SIGNAL, and gives the command 20 s to end.
# Sets rc (its exit code) and stop_s (seconds from the signal to its end).
signal_mid_sample() {
  local signal=$1 marker=$2 i at pid start
  shift 2
  set -m
  "$@" >"$tmp/sample" 2>"$tmp/sample.err" &
  pid=$!
  set +m
  for ((i = 0; i < 1200; ++i)); do
    at=$(grep -a -b -m1 -F -- "$marker" "$tmp/sample" | cut -d: -f1)
    [[ -n $at ]] && (($(stat -c %s "$tmp/sample") >= at + ${#marker} + 200)) && break
    kill -0 "$pid" 2>/dev/null || fail "the command ended before its sample was under way: $(tail -c 300 "$tmp/sample.err")"
    sleep 0.1
  done
  ((i < 1200)) || fail "no sample under way within 120 s"
  start=$EPOCHREALTIME
  kill -"$signal" "$pid"
  for ((i = 0; i < 200; ++i)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && fail "SIG$signal did not end the command within 20 s"
  wait "$pid"
  rc=$?
  stop_s=$(/usr/bin/python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$start" \
    "$EPOCHREALTIME")
}

# A stop signal during train --sample, after the last checkpoint: the sample ends within 20 s (it would
# run for hours), with the tokens made so far printed and a line that says so; the run had finished,
# so it exits 0 (75 would have a scheduler resume a run with no step left).
case_train_sample_stopped() {
  local rc stop_s at_text at_line tokens
  signal_mid_sample TERM $'sample:\n' "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --sample 100000000 \
    --data "$ws/text.txt" --out "$ws/sampled"
  grep -a '^sample cut short' "$tmp/sample"
  echo "SIGTERM 200 bytes into the sample: train exited $rc, $stop_s s after the signal"
  ((rc == 0)) || fail "the finished run exited $rc, not 0"
  grep -aq '^sample cut short by SIGTERM after [0-9]* of 100000000 tokens; the run had finished' "$tmp/sample" ||
    fail "no line says the sample was cut short"
  tokens=$(grep -a '^sample cut short' "$tmp/sample" | sed 's/.* after \([0-9]*\) of .*/\1/')
  at_text=$(($(grep -a -b -m1 '^sample:$' "$tmp/sample" | cut -d: -f1) + 8))
  at_line=$(grep -a -b '^sample cut short' "$tmp/sample" | tail -n 1 | cut -d: -f1)
  ((at_line - 1 - at_text == tokens && tokens >= 200)) ||
    fail "the sample printed $((at_line - 1 - at_text)) bytes, but the line says $tokens tokens (at least 200)"
}

# optimus sample, sent SIGTERM, SIGUSR1 or SIGINT 200 bytes into a sample of 10^8 tokens: it ends
# within 20 s. SIGTERM and SIGUSR1 (the stop signals) leave the prompt and the tokens made so far on
# stdout and one line on stderr, exit code 75; SIGINT ends it at once, as a shell's Ctrl-C does (130).
case_sample_stopped() {
  local rc stop_s signal tokens
  for signal in TERM USR1; do
    signal_mid_sample "$signal" 'The ' "$optimus" sample --checkpoint "$good" --prompt 'The ' --tokens 100000000
    cat "$tmp/sample.err"
    echo "SIG$signal 200 bytes into the sample: sample exited $rc, $stop_s s after the signal"
    ((rc == 75)) || fail "sample exited $rc after SIG$signal, not 75"
    grep -q "^stopped by SIG$signal after [0-9]* of 100000000 tokens (exit code 75)$" "$tmp/sample.err" ||
      fail "no stop line on stderr"
    tokens=$(sed 's/.* after \([0-9]*\) of .*/\1/' "$tmp/sample.err")
    (($(stat -c %s "$tmp/sample") == 4 + tokens + 1 && tokens >= 200)) ||
      fail "stdout has $(stat -c %s "$tmp/sample") bytes, not the prompt, $tokens tokens (at least 200) and a newline"
  done
  signal_mid_sample INT 'The ' "$optimus" sample --checkpoint "$good" --prompt 'The ' --tokens 100000000
  echo "SIGINT 200 bytes into the sample: sample exited $rc, $stop_s s after the signal"
  ((rc == 130)) || fail "sample exited $rc after SIGINT, not 130 (ended by the signal)"
}

case_min_lr_above_lr() {
  refused "the final learning rate (--min-lr) must be at most the peak learning rate (--lr 0.001), but is 1" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --lr 0.001 --min-lr 1 --data "$ws/text.txt" --out "$ws/new_run"
}

# --lr below the old fixed --min-lr default (1e-4), alone: accepted, and the cosine ends at a tenth of it
# (the last step's learning rate is --min-lr exactly).
case_lr_alone_default_min_lr() {
  "$optimus" train "${model[@]}" --eval-batches 1 --progress lines --log-interval 1 --steps 3 --warmup 0 --lr 5e-5 \
    --data "$ws/text.txt" --out "$ws/low_lr" >"$tmp/out" 2>&1 || fail "train --lr 5e-5 failed: $(cat "$tmp/out")"
  grep 'lr ' "$tmp/out"
  grep -q '"step": 3, .*"lr": 5e-06,' "$ws/low_lr/metrics.jsonl" || fail "the last step's learning rate is not 5e-06"
}

# sample refuses a model past this machine's memory (here n_positions 2^20) with remedies of its own:
# no --batch, no more processes (sample has neither).
case_sample_past_memory() {
  local ckpt
  ckpt=$(copy_of_good long_positions)
  set_config n_positions 1048576 "$ckpt"
  refused "; sample runs the whole model in one process, so use another checkpoint or a machine with more memory" \
    "$optimus" sample --checkpoint "$ckpt" --tokens 5
  ! grep -E -- '--batch|--seq|--layers|--embd|processes' "$tmp/out" || fail "the message names what sample lacks"
}

# A prompt holding a byte past a 100-token model's vocabulary (which would be read past its embedding).
case_sample_prompt_past_vocabulary() {
  "$optimus" init --layers 1 --embd 32 --heads 2 --seq 16 --vocab 100 --out "$ws/vocab100" >/dev/null ||
    fail "optimus init --vocab 100 failed"
  refused "the prompt holds the token 122 (a byte), past the model's vocabulary of 100 tokens" \
    "$optimus" sample --checkpoint "$ws/vocab100" --prompt zz --tokens 5
  [[ $(head -c 6 "$tmp/out") == error: ]] || fail "the refused sample printed something before its error line"
}

# Values of 100 000 characters: each message shows 40 of them (a path also its length), one short line.
case_long_values_cut() {
  local long
  long=$(head -c 100000 /dev/zero | tr '\0' x)
  refused "--data '${long:0:40}...' is 100000 characters long, more than a path can have" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --data "$long" --out "$ws/new_run"
  (($(wc -c <"$tmp/out") < 300)) || fail "the message is $(wc -c <"$tmp/out") bytes long"
  refused "--checkpoint '${long:0:40}...' is 100000 characters long" "$optimus" sample --checkpoint "$long"
  (($(wc -c <"$tmp/out") < 300)) || fail "the message is $(wc -c <"$tmp/out") bytes long"
  refused "--progress must be auto, live or lines, but is '${long:0:40}'" \
    "$optimus" train "${model[@]}" --progress "$long" --data "$ws/text.txt" --out "$ws/new_run"
  (($(wc -c <"$tmp/out") < 300)) || fail "the message is $(wc -c <"$tmp/out") bytes long"
}

# An --out whose last name is longer than a folder's can be (255 bytes): refused before the model is
# built, not after the first step when the folder is made.
case_out_name_too_long() {
  local long
  long=$(head -c 300 /dev/zero | tr '\0' x)
  refused "cannot write the output folder $ws/$long (File name too long); choose --out a folder you can write" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --data "$ws/text.txt" --out "$ws/$long"
  ! grep -q '^training ' "$tmp/out" || fail "the run began before the refusal"
}

# ---- whose ids: a checkpoint's tokenizer against the data's ----------------------------------------------
# fingerprint DIR: FNV-1a (64 bits) over DIR's vocab.json and merges.txt, each after its length and a
# colon, in 16 hexadecimal digits — computed here as text/tokenizer_folder.cpp defines it.
fingerprint() {
  /usr/bin/python3 - "$1" <<'PY'
import sys
h = 14695981039346656037
for name in ("vocab.json", "merges.txt"):
    data = open(f"{sys.argv[1]}/{name}", "rb").read()
    for c in str(len(data)).encode() + b":" + data:
        h = ((h ^ c) * 1099511628211) % 2**64
print(f"{h or 1:016x}")
PY
}
# other_tokenized DIR: as tokenized, with another tokenizer of the same 261 tokens and 4 merges:
# the small one with the ids of "the" and "<|endoftext|>" swapped.
other_tokenized() {
  small_tokenizer "$1.tokenizer"
  /usr/bin/python3 - "$1.tokenizer/vocab.json" <<'PY'
import json, sys
vocab = json.load(open(sys.argv[1], encoding="utf-8"))
vocab["the"], vocab["<|endoftext|>"] = vocab["<|endoftext|>"], vocab["the"]
json.dump(vocab, open(sys.argv[1], "w", encoding="utf-8"), ensure_ascii=False)
PY
  "$optimus" tokenize --tokenizer "$1.tokenizer" --input "$ws/text.txt" --out "$1" >/dev/null ||
    fail "optimus tokenize into $1 failed"
}
# bpe_checkpoint: $ws/a (the small tokenizer's tokens) and a model trained 2 steps on it, in $ws/bpe_run.
bpe_checkpoint() {
  tokenized "$ws/a"
  "$optimus" train "${model[@]}" "${quiet[@]}" --steps 2 --data "$ws/a" --out "$ws/bpe_run" >"$tmp/bpe.log" 2>&1 || {
    cat "$tmp/bpe.log"
    fail "training on $ws/a failed"
  }
  echo "$ws/bpe_run/step_000002"
}
# without_fingerprint CKPT: CKPT's model.safetensors as checkpoints were written before they
# recorded their tokenizer (its metadata without tokenizer_fingerprint; the tensors' bytes unchanged).
without_fingerprint() {
  /usr/bin/python3 - "$1/model.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
del header["__metadata__"]["tokenizer_fingerprint"]
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
}
case_val_other_tokenizer() {
  tokenized "$ws/a"
  other_tokenized "$ws/b"
  refused "--val $ws/b/val.tok holds ids of tokenizer $(fingerprint "$ws/b.tokenizer"), but --data $ws/a/train.tok \
holds ids of tokenizer $(fingerprint "$ws/a.tokenizer"); give validation data of --data's tokenizer: tokenize the text \
with the tokenizer of fingerprint $(fingerprint "$ws/a.tokenizer") (optimus tokenize --tokenizer DIR --input FILE --out \
FOLDER)" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 2 --data "$ws/a/train.tok" --val "$ws/b/val.tok" \
    --out "$ws/new_run"
}
case_init_from_other_tokenizer() {
  local ckpt
  ckpt=$(bpe_checkpoint)
  other_tokenized "$ws/b"
  refused "--data $ws/b/train.tok holds ids of tokenizer $(fingerprint "$ws/b.tokenizer"), but --init-from $ckpt was \
trained on tokenizer $(fingerprint "$ws/a.tokenizer"); tokenize the text with that tokenizer (optimus tokenize \
--tokenizer $ckpt --input FILE --out FOLDER)" \
    "$mpiexec" -np 2 "$optimus" train --layout 1d --init-from "$ckpt" "${quiet[@]}" --steps 2 --data "$ws/b" \
    --out "$ws/new_run"
}
case_init_from_byte_model_token_data() {
  tokenized "$ws/a"
  refused "--data $ws/a/train.tok holds ids of tokenizer $(fingerprint "$ws/a.tokenizer"), but --init-from $good was \
trained on tokenizer bytes (text); give the text itself" \
    "$optimus" train --init-from "$good" "${quiet[@]}" --steps 2 --data "$ws/a" --out "$ws/new_run"
}
case_resume_other_tokenizer() {
  local ckpt
  ckpt=$(bpe_checkpoint)
  other_tokenized "$ws/b"
  refused "--data $ws/b/train.tok holds ids of tokenizer $(fingerprint "$ws/b.tokenizer"), but --resume $ckpt was \
trained on tokenizer $(fingerprint "$ws/a.tokenizer")" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/b" --resume "$ckpt" --out "$ws/bpe_run"
}
case_eval_bpe_checkpoint_on_text() {
  local ckpt
  ckpt=$(bpe_checkpoint)
  refused "--data $ws/text.txt is text (tokenizer bytes), but the checkpoint $ckpt was trained on tokenizer \
$(fingerprint "$ws/a.tokenizer"); tokenize the text with that tokenizer (optimus tokenize --tokenizer $ckpt --input \
$ws/text.txt --out FOLDER)" \
    "$optimus" eval --checkpoint "$ckpt" "${eval_args[@]}"
}
case_eval_other_tokenizer() {
  local ckpt
  ckpt=$(bpe_checkpoint)
  other_tokenized "$ws/b"
  refused "--data $ws/b/val.tok holds ids of tokenizer $(fingerprint "$ws/b.tokenizer"), but the checkpoint $ckpt \
was trained on tokenizer $(fingerprint "$ws/a.tokenizer")" \
    "$mpiexec" -np 2 "$optimus" eval --layout 1d --checkpoint "$ckpt" --data "$ws/b/val.tok" --batch 4 --seq 16
}
case_eval_ids_past_vocabulary() {
  /usr/bin/python3 -c "
import struct, sys
n = 5000  # a token file of ids up to 999 (a vocabulary of 1000) that records no tokenizer
data = b'OPTMTOKN' + struct.pack('<IIQQI', 1, 2, n, 3 * n, 1000).ljust(56, b'\0')
open(sys.argv[1], 'wb').write(data + struct.pack(f'<{n}H', *[(7 * i) % 1000 for i in range(n)]))" "$ws/ids.tok"
  refused "the data file '$ws/ids.tok' holds ids up to 999 (a vocabulary of 1000), past the vocabulary of 256 of the \
checkpoint $good; tokenize the data for this model or use another checkpoint" \
    "$optimus" eval --checkpoint "$good" --data "$ws/ids.tok" --batch 4 --seq 16
}
case_sample_other_tokenizer_files() {
  local ckpt
  ckpt=$(bpe_checkpoint)
  other_tokenized "$ws/b"
  cp "$ws/b.tokenizer/vocab.json" "$ckpt/vocab.json"
  refused "the checkpoint $ckpt was trained on tokenizer $(fingerprint "$ws/a.tokenizer"), but its vocab.json and \
merges.txt are tokenizer $(fingerprint "$ws/b.tokenizer"); put back the files of the tokenizer it was trained on" \
    "$optimus" sample --checkpoint "$ckpt" --tokens 5
}
case_sample_without_tokenizer_files() {
  local ckpt
  ckpt=$(bpe_checkpoint)
  rm "$ckpt/vocab.json" "$ckpt/merges.txt"
  refused "the checkpoint $ckpt was trained on tokenizer $(fingerprint "$ws/a.tokenizer"), but holds no vocab.json \
and merges.txt to turn text into its ids and back" \
    "$optimus" sample --checkpoint "$ckpt" --tokens 5
}

# A checkpoint written before checkpoints recorded their tokenizer still evaluates (serial, and 1d on
# 2 ranks), to the loss it has with the record, with one note on stderr, printed once; and a resumed run
# from one goes on. An untrained checkpoint (optimus init: "none") evaluates text and token files
# without a note.
case_checkpoint_without_fingerprint() {
  local note="records no tokenizer fingerprint and holds no tokenizer" with n np
  cp -r "$good" "$ws/old"
  without_fingerprint "$ws/old"
  for np in 1 2; do
    with=$("$mpiexec" -np $np "$optimus" eval --layout 1d --checkpoint "$good" "${eval_args[@]}" 2>"$tmp/err") ||
      fail "eval of $good failed"
    ! grep -q note "$tmp/err" || fail "eval of a checkpoint that records its tokenizer printed a note: $(cat "$tmp/err")"
    "$mpiexec" -np $np "$optimus" eval --layout 1d --checkpoint "$ws/old" "${eval_args[@]}" >"$tmp/out" 2>"$tmp/err" ||
      fail "eval of the checkpoint without a fingerprint on $np rank(s) failed: $(cat "$tmp/out" "$tmp/err")"
    cat "$tmp/out" "$tmp/err"
    [[ "$(cat "$tmp/out")" == "$with" ]] || fail "its loss '$(cat "$tmp/out")' is not '$with'"
    n=$(grep -c -F "note: the checkpoint $ws/old $note" "$tmp/err")
    ((n == 1)) || fail "the note was printed $n times on $np rank(s); expected once"
  done
  cp -r "$ws/run/step_000002" "$ws/old_2"
  without_fingerprint "$ws/old_2"
  "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" --resume "$ws/old_2" --out "$ws/old_run" \
    >"$tmp/out" 2>&1 || fail "--resume from the checkpoint without a fingerprint failed: $(cat "$tmp/out")"
  grep -F "note: --resume $ws/old_2 $note" "$tmp/out" || fail "the resumed run printed no note"
  "$optimus" init --layers 1 --embd 32 --heads 2 --seq 16 --vocab 261 --out "$ws/fresh" >/dev/null || fail "init failed"
  tokenized "$ws/a"
  for data in "$ws/text.txt" "$ws/a/val.tok"; do
    "$optimus" eval --checkpoint "$ws/fresh" --data "$data" --batch 4 --seq 16 >"$tmp/out" 2>&1 ||
      fail "eval of an untrained checkpoint on $data failed: $(cat "$tmp/out")"
    cat "$tmp/out"
    ! grep -q note "$tmp/out" || fail "eval of an untrained checkpoint printed a note"
  done
}

# ---- size: linear in the blocks and in a header's entries ------------------------------------------
# A header of a million entries is read in seconds (it was one ordered JSON object, whose keys were
# searched at each insertion: 100 000 took 27 s, a million about 45 minutes); fails_with's 60 s bound.
# A train_state whose flags hold a value of a million characters: the message cuts it to 40.
case_state_flag_value_long() {
  local ckpt
  ckpt=$(copy_of_good long_flag)
  /usr/bin/python3 - "$ckpt/train_state.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
flags = header["__metadata__"]["flags"].split()
header["__metadata__"]["flags"] = " ".join("lr=" + "x" * 1000000 if f.startswith("lr=") else f for f in flags)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
  refused "was trained with --lr $(printf 'x%.0s' {1..40})... (this run has 0.001); resume with the flags" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" --resume "$ckpt" --out "$ws/new_run"
  (($(grep 'error:' "$tmp/out" | wc -c) < 400)) || fail "the error line is $(grep 'error:' "$tmp/out" | wc -c) bytes long"
}

case_header_million_tensors() {
  local ckpt
  ckpt=$(copy_of_good million_tensors)
  /usr/bin/python3 "$(dirname "$0")/many_entries.py" "$ckpt/model.safetensors" 1000000 tensors
  refused "has an unexpected tensor \"empty." "$optimus" eval --checkpoint "$ckpt" "${eval_args[@]}"
}
case_header_past_entry_cap() {
  local ckpt
  ckpt=$(copy_of_good entry_cap)
  /usr/bin/python3 "$(dirname "$0")/many_entries.py" "$ckpt/train_state.safetensors" 1048577 metadata
  refused "train_state.safetensors has more than 1048576 entries in its header, far more than any model has tensors" \
    "$optimus" train "${model[@]}" "${quiet[@]}" --steps 4 --data "$ws/text.txt" --resume "$ckpt" --out "$ws/new_run"
}

# 10 000 blocks (of width 8) train, save, resume bitwise and evaluate in seconds: building a model, its
# checkpoints and loading them are linear in the blocks (a parameter looked up by its name in the list
# of all 12·L + 5, and the header as one ordered JSON object, made one run take minutes).
case_ten_thousand_layers() {
  local deep=(--layers 10000 --embd 8 --heads 1 --seq 8 --batch 1 --steps 2 --warmup 0 --checkpoint-interval 1
    --keep 0 --eval-batches 1 --progress lines --log-interval 0 --data "$ws/text.txt")
  timeout 150 "$optimus" train "${deep[@]}" --out "$ws/deep" >"$tmp/out" 2>&1 ||
    fail "the run failed: $(tail -3 "$tmp/out")"
  timeout 150 "$optimus" train "${deep[@]}" --resume "$ws/deep/step_000001" --out "$ws/deep_resumed" >"$tmp/out" 2>&1 ||
    fail "the resumed run failed: $(tail -3 "$tmp/out")"
  local f
  for f in model.safetensors train_state.safetensors; do
    cmp "$ws/deep/step_000002/$f" "$ws/deep_resumed/step_000002/$f" || fail "the resumed run's $f differs"
  done
  timeout 60 "$optimus" eval --checkpoint "$ws/deep/step_000002" --data "$ws/text.txt" --batch 1 --seq 8 --batches 1 \
    >"$tmp/out" 2>&1 || fail "eval failed: $(tail -3 "$tmp/out")"
  grep -E '^loss [0-9.]+$' "$tmp/out" || fail "eval printed no loss: $(cat "$tmp/out")"
}

declare -F "case_$name" >/dev/null || fail "no case '$name'"
"case_$name"
echo "PASS: $name"
