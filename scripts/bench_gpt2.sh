#!/usr/bin/env bash
# GPT-2 124M's shapes end to end on this machine, optimus beside Hugging Face transformers (PyTorch
# eager, float32) in the same run (scripts/bench_gpt2.py): a transformers-saved GPT-2 124M (random
# weights) loaded and evaluated on 16 tokens, a model of its shapes initialised and written, the
# first token sampled, one training step from the checkpoint at B=1 and B=8 (T=64) with its
# validation and checkpoint (model and AdamW state), each operation in its own process with its
# time and peak resident memory. Writes bench/gpt2.jsonl and bench/gpt2.txt (the printed table).
# Takes about two minutes here. Needs the virtual environment of scripts/setup_venv (transformers).
# Usage: scripts/bench_gpt2.sh [--threads N]   (N: threads of each side, default 2)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${OPTIMUS_BUILD_DIR:-$root/build}
python=$root/.venv/bin/python
script=bench_gpt2
source "$root/scripts/script_args.sh"
threads=()
while (($#)); do
  case $1 in
    --threads) args_value --threads $#; args_whole --threads "$2" 1 256; threads=(--threads "$2"); shift 2 ;;
    *) args_fail "unknown argument '$1' (usage: scripts/bench_gpt2.sh [--threads N])" ;;
  esac
done
args_output_file bench/gpt2.jsonl "$root/bench/gpt2.jsonl"
args_output_file bench/gpt2.txt "$root/bench/gpt2.txt"
[[ -x $python ]] || { echo "bench_gpt2: no $python; run scripts/setup_venv first" >&2; exit 1; }
[[ -x $build/optimus ]] || { echo "bench_gpt2: no $build/optimus; run scripts/build first" >&2; exit 1; }
PYTHONNOUSERSITE=1 "$python" "$root/scripts/bench_gpt2.py" "$build/optimus" "$root/bench/gpt2.jsonl" \
  "$root/bench/gpt2.txt" "${threads[@]}"
echo "bench_gpt2: results in bench/gpt2.jsonl and bench/gpt2.txt"
