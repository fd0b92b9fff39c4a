#!/usr/bin/env bash
# Chapter 1's benchmark: the serial GPT ("tiny" and "small", B=8) against the same model in
# PyTorch eager (float32), measured in the same run. Each side runs with 1 and with 2 threads and
# keeps the better; the ratio is PyTorch's step time over ours (> 1: we are faster).
# With --rounds N the two sides take turns N times, model by model (ours first in odd rounds,
# PyTorch first in even ones, so that a drift in the machine's speed falls on both), and the table
# gives each the median round and the ratio of every round (scripts/bench_serial.py).
# Writes JSON lines to bench/serial.jsonl (or OUT) and prints a table.
# Usage: scripts/bench.sh [--rounds N] [OUT]
# scripts/bench.sh --report FILE prints the table of a finished run (FILE) again, measuring nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
table=$root/scripts/bench_serial.py
script=bench
source "$root/scripts/script_args.sh"
usage="scripts/bench.sh [--rounds N] [OUT] | --report FILE"
if [[ ${1:-} == --report ]]; then  # --report FILE: print a finished run's tables again, measuring nothing
  args_value --report $#
  (($# == 2)) || args_fail "--report takes one file and nothing else (usage: $usage)"
  args_input_file --report "$2"
  /usr/bin/python3 "$table" report "$2"
  echo "bench: results in ${2#"$root"/}"
  exit 0
fi
rounds=1
out=$root/bench/serial.jsonl
outs=0
while (($#)); do
  case $1 in
    --rounds)
      args_value --rounds $#
      rounds=$2
      args_whole --rounds "$rounds" 1 100
      shift 2 ;;
    -*) args_fail "unknown option '$1' (usage: $usage)" ;;
    *) out=$1; outs=$((outs + 1)); shift ;;
  esac
done
((outs <= 1)) || args_fail "give one OUT file, not $outs (usage: $usage)"
args_output_file OUT "$out"
build=${OPTIMUS_BUILD_DIR:-$root/build}
[[ -x $build/optimus && -x $build/chapters/block_demo ]] || args_fail "$build/optimus or chapters/block_demo is not built; run scripts/build"
mkdir -p "$(dirname "$out")"
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
echo "bench: $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $rounds round(s)"
echo "bench: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} (left as the environment sets it)"
in_round() {  # in_round R: each JSON line read, with "round": R first
  sed "s/^{/{\"round\": $1, /"
}
ours() {  # ours MODEL ROUND
  for threads in 1 2; do
    OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "$build/optimus" bench --model "$1" | in_round "$2" >> "$raw"
  done
}
theirs() {  # theirs MODEL ROUND
  /usr/bin/python3 "$root/scripts/bench_torch.py" --models "$1" | in_round "$2" >> "$raw"
}
for ((round = 1; round <= rounds; round++)); do
  for model in tiny small; do
    if ((round % 2)); then ours "$model" "$round"; theirs "$model" "$round"
    else theirs "$model" "$round"; ours "$model" "$round"; fi
  done
done
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$build/chapters/block_demo" 8 128 256 4 7 --json \
  | sed 's/^/{"impl": "optimus", "what": "block ops ms, tiny block, 1 thread", "ops": /; s/$/}/' >> "$raw"
/usr/bin/python3 "$table" merge "$raw" "$out"
/usr/bin/python3 "$table" report "$out"
echo "bench: results in ${out#"$root"/}"
