#!/usr/bin/env bash
# Chapter 2's benchmark: Megatron 1D at p = 1, 2, 4 on "tiny" and p = 1, 2 on "small" (whose
# 6 heads 4 ranks cannot share) (B=8), beside the serial
# stage in the same run: step and forward time, tokens/s, per-rank peak memory by category and
# per-rank communication per step (calls, bytes). The cores are shared out: 2 OpenMP threads per
# rank at p = 1, one thread per rank above (p = 4 oversubscribes this 2-core machine, so its time
# shows the cost of sharing cores, not of the algorithm). Writes JSON lines to bench/tp1d.jsonl
# (or $1) and prints a table. Usage: scripts/bench_1d.sh [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
report() {  # report FILE: the tables of a finished run, from its JSON lines
  /usr/bin/python3 - "$1" "$root/scripts" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import script_args
def tables(rows):
    print(f"\n{'model':6} {'stage':7} {'p':>2} {'step ms':>9} {'fwd ms':>8} {'tok/s':>7} {'vs serial':>9} "
          f"{'params MiB':>10} {'acts MiB':>9} {'total MiB':>9} {'all-reduce calls':>16} {'MiB/step':>9}")
    for model in ("tiny", "small"):
        serial = next(r for r in rows if r["model"] == model and r["stage"] == "serial")
        for r in (x for x in rows if x["model"] == model):
            c = r["comm_per_step"]
            calls = sum(v["calls"] for v in c.values())
            mib = sum(v["bytes"] for v in c.values()) / 2**20
            m = r["peak_memory_mib"]
            print(f"{model:6} {r['stage']:7} {r['ranks']:>2} {r['step_ms']:>9.1f} {r['forward_ms']:>8.1f} "
                  f"{r['tokens_per_s']:>7.0f} {serial['step_ms'] / r['step_ms']:>8.2f}x {m['parameters']:>10.2f} "
                  f"{m['activations']:>9.2f} {m['total']:>9.2f} {calls:>16} {mib:>9.2f}")
rows = script_args.jsonl_file("bench", "--report", sys.argv[1])
script_args.tables("bench", "--report", sys.argv[1], tables, rows)
PY
}
script=bench
source "$root/scripts/script_args.sh"
usage="scripts/bench_1d.sh [OUT] | --report FILE"
if [[ ${1:-} == --report ]]; then  # --report FILE: print a finished run's tables again, measuring nothing
  args_value --report $#
  (($# == 2)) || args_fail "--report takes one file and nothing else (usage: $usage)"
  args_input_file --report "$2"
  report "$2"
  echo "bench: results in ${2#"$root"/}"
  exit 0
fi
(($# <= 1)) || args_fail "give one OUT file, not $# arguments (usage: $usage)"
[[ ${1:-} != -* ]] || args_fail "unknown option '$1' (usage: $usage)"
build=${OPTIMUS_BUILD_DIR:-$root/build}
out=${1:-$root/bench/tp1d.jsonl}
args_output_file OUT "$out"
[[ -x $build/optimus ]] || args_fail "$build/optimus is not built; run scripts/build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mkdir -p "$(dirname "$out")"
final=$out out=$out.partial   # written whole, then renamed: readers never see half a file
: > "$out"
cores=$(nproc)
echo "bench: $(date -u +%Y-%m-%dT%H:%MZ) on $cores cores; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"
for model in tiny small; do
  OMP_NUM_THREADS=$cores "$build/optimus" bench --layout serial --model "$model" >> "$out"
  # small has NH = 6 heads, which 4 ranks cannot share (and V = 256 rules out 3): p = 1, 2 only.
  ps="1 2 4"; [[ $model == small ]] && ps="1 2"
  for p in $ps; do
    threads=$(( cores / p > 0 ? cores / p : 1 ))
    # --bind-to none: OpenMPI binds each of 1 or 2 ranks to one core, which would squeeze the two
    # OpenMP threads of p = 1 onto a single core.
    mpiexec -np $p --bind-to none -x OMP_NUM_THREADS=$threads "$build/optimus" bench --layout 1d --model "$model" >> "$out"
  done
done
mv "$out" "$final"
out=$final
report "$out"
echo "bench: results in ${out#"$root"/}"
