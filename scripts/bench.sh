#!/usr/bin/env bash
# Chapter 1's benchmark: the serial GPT ("tiny" and "small", B=8) against the same model in
# PyTorch eager (float32), measured in the same run. Each side runs with 1 and with 2 threads and
# keeps the better; the ratio is PyTorch's step time over ours (> 1: we are faster).
# Writes JSON lines to bench/serial.jsonl (or $1) and prints a table. Usage: scripts/bench.sh [OUT]
# scripts/bench.sh --report FILE prints the table of a finished run (FILE) again, measuring nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
report() {  # report FILE: the tables of a finished run, from its JSON lines
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"\n{'model':6} {'impl':14} {'threads':>7} {'step ms':>9} {'fwd ms':>8} {'tok/s':>8} {'GFLOP/s':>8} {'peak MiB':>9}")
for model in ("tiny", "small"):
    ours = [r for r in rows if r.get("impl") == "optimus" and r.get("model") == model]
    best = min(ours, key=lambda r: r["step_ms"])
    torch = next(r for r in rows if r.get("impl") == "pytorch-eager" and r["model"] == model)
    for r in ours:
        print(f"{model:6} {'optimus serial':14} {r['threads']:>7} {r['step_ms']:>9.1f} {r['forward_ms']:>8.1f} "
              f"{r['tokens_per_s']:>8.0f} {r['gflops']:>8.1f} {r['peak_memory_mib']['total']:>9.1f}")
    gf = best["gflops"] * best["step_ms"] / torch["step_ms"]
    print(f"{model:6} {'pytorch eager':14} {torch['best_threads']:>7} {torch['step_ms']:>9.1f} {torch['forward_ms']:>8.1f} "
          f"{torch['tokens_per_s']:>8.0f} {gf:>8.1f} {'':>9}")
    print(f"{model:6} speed-up of our best over PyTorch's best: {torch['step_ms'] / best['step_ms']:.2f}x "
          f"(step), {torch['forward_ms'] / best['forward_ms']:.2f}x (forward); "
          f"its own matrix products (linears, LM head) alone at {best['matmul_gflops']:.0f} GFLOP/s, "
          f"model at {100 * best['fraction_of_matmul']:.0f}% of it")
ops = next(r for r in rows if "ops" in r)["ops"]
total = sum(ops.values())
top = sorted(ops.items(), key=lambda kv: -kv[1])[:5]
print("\nwhere one tiny block's time goes (1 thread): " + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in top))
PY
}
if [[ ${1:-} == --report ]]; then  # --report FILE: print a finished run's tables again, measuring nothing
  report "$2"
  echo "bench: results in ${2#"$root"/}"
  exit 0
fi
build=${OPTIMUS_BUILD_DIR:-$root/build}
out=${1:-$root/bench/serial.jsonl}
mkdir -p "$(dirname "$out")"
: > "$out"
echo "bench: $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo "bench: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} (left as the environment sets it)"
for model in tiny small; do
  for threads in 1 2; do
    OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "$build/optimus" bench --model "$model" >> "$out"
  done
done
/usr/bin/python3 "$root/scripts/bench_torch.py" --models tiny small >> "$out"
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$build/chapters/block_demo" 8 128 256 4 7 --json \
  | sed 's/^/{"impl": "optimus", "what": "block ops ms, tiny block, 1 thread", "ops": /; s/$/}/' >> "$out"
report "$out"
echo "bench: results in ${out#"$root"/}"
