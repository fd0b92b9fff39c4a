#!/usr/bin/env bash
# Chapter 3's benchmark: Optimus 2D against Megatron 1D on the same number of ranks, in the same
# run. At p = 4: "tiny" (L4 C256 NH4 T128) at B = 8 and 32; at p = 9: "tiny9" (L4 C288 NH9 T128,
# whose 9 heads both layouts can split) at B = 9 and 36. For each: training-step and forward-only
# ("inference") time, tokens/s, per-rank peak memory by category, per-rank communication per
# step (calls, bytes, by communicator and operation). Then the largest batch whose training step
# fits a per-rank memory budget (MAX_BATCH_MIB, default 256 MiB), enforced by the memory ledger,
# for 1D and 2D at p = 4 and 9: our measured counterpart of the paper's "larger maximum batch".
# One OpenMP/OpenBLAS thread per rank: 4 and 9 ranks oversubscribe this 2-core machine, so the
# times show sharing cores as much as the algorithms; the memory and communication are exact.
# Writes JSON lines to bench/tp2d.jsonl (or $1) and prints tables. Usage: scripts/bench_2d.sh [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
report() {  # report FILE: the tables of a finished run, from its JSON lines
  /usr/bin/python3 - "$1" "$root/scripts" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import script_args
def tables(rows):
    timed = [r for r in rows if "step_ms" in r]
    if not timed or len(timed) % 2:
        raise ValueError("its timed rows are not pairs of 1D and 2D")
    print(f"\n{'model':6} {'p':>2} {'B':>3} {'layout':6} {'step ms':>9} {'fwd ms':>8} {'tok/s':>7} {'acts MiB':>9} "
          f"{'total MiB':>9} {'calls':>6} {'MiB/step':>9}   1D/2D: step  fwd  acts  total  bytes")
    for k in range(0, len(timed), 2):
        pair = timed[k:k + 2]
        for r in pair:
            c = r["comm_per_step"]
            r["calls"] = sum(v["calls"] for v in c.values())
            r["mib"] = sum(v["bytes"] for v in c.values()) / 2**20
            m = r["peak_memory_mib"]
            print(f"{r['model']:6} {r['ranks']:>2} {r['B']:>3} {r['stage']:6} {r['step_ms']:>9.1f} {r['forward_ms']:>8.1f} "
                  f"{r['tokens_per_s']:>7.0f} {m['activations']:>9.2f} {m['total']:>9.2f} {r['calls']:>6} {r['mib']:>9.2f}", end="")
            if r["stage"] == "2d":
                one = pair[0]
                ratio = lambda key: one[key] / r[key]
                mem = lambda key: one["peak_memory_mib"][key] / r["peak_memory_mib"][key]
                print(f"   {ratio('step_ms'):>10.2f} {ratio('forward_ms'):>4.2f} {mem('activations'):>5.2f} "
                      f"{mem('total'):>6.2f} {ratio('mib'):>6.2f}", end="")
            print()
    print(f"\n{'model':6} {'p':>2} {'layout':6} {'budget MiB':>10} {'max batch':>9} {'total MiB at max':>16}   2D/1D")
    maxb = [r for r in rows if "max_batch" in r]
    for k in range(0, len(maxb), 2):
        one, two = maxb[k:k + 2]
        for r in (one, two):
            extra = f"   {two['max_batch'] / max(one['max_batch'], 1):.2f}x" if r is two else ""
            print(f"{r['model']:6} {r['ranks']:>2} {r['stage']:6} {r['budget_mib']:>10.0f} {r['max_batch']:>9} "
                  f"{r['peak_memory_mib_at_max'].get('total', 0):>16.2f}{extra}")
rows = script_args.jsonl_file("bench", "--report", sys.argv[1])
script_args.tables("bench", "--report", sys.argv[1], tables, rows)
PY
}
script=bench
source "$root/scripts/script_args.sh"
usage="scripts/bench_2d.sh [OUT] | --report FILE"
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
out=${1:-$root/bench/tp2d.jsonl}
args_output_file OUT "$out"
budget=${MAX_BATCH_MIB:-256}
args_whole MAX_BATCH_MIB "$budget" 1 1048576
[[ -x $build/optimus ]] || args_fail "$build/optimus is not built; run scripts/build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mkdir -p "$(dirname "$out")"
final=$out out=$out.partial   # written whole, then renamed: readers never see half a file
: > "$out"
echo "bench: $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; 1 thread per rank"
run() {  # run NP ARGS...: one bench line from NP ranks
  local np=$1
  shift
  mpiexec -np "$np" --bind-to none -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 "$build/optimus" bench "$@" >> "$out"
}
for spec in "4 tiny 8" "4 tiny 32" "9 tiny9 9" "9 tiny9 36"; do
  read -r np model batch <<< "$spec"
  for layout in 1d 2d; do  # the two layouts back to back, in the same run
    run "$np" --layout "$layout" --model "$model" --batch "$batch"
  done
done
for spec in "4 tiny" "9 tiny9"; do
  read -r np model <<< "$spec"
  for layout in 1d 2d; do
    run "$np" --layout "$layout" --model "$model" --max-batch-budget "$budget"
  done
done
mv "$out" "$final"
report "$final"
echo "bench: results in ${final#"$root"/}"
