# The GPU check's profile step (sourced by scripts/gpu_check.sh with GPU_CHECK_PROFILE=1; it defines
# log, left, $out and $build): where one training step of stage 1 at GPT-2 124M's shapes spends its
# GPU time. Nsight Compute (ncu) times every kernel of `optimus bench --steps 1 --warmup 0` with one
# metric, gpu__time_duration (one pass per kernel, the clocks left as they are); the step's kernels
# are those from the first embedding lookup to the AdamW update. Appends to bench.log under $out,
# and prints for summary.txt, the kernel time summed by kernel, against the step's wall time in the
# same run; sets profile_rc.

gpu_check_profile() {
  local ncu csv B=${GPU_CHECK_BATCH:-8}
  profile_rc=1
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [[ -z $ncu ]]; then log "profile: no ncu on this machine"; return; fi
  csv=$(mktemp)
  OMP_NUM_THREADS=8 timeout "$(left)" "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv \
    --print-units base "$build/optimus" bench --device cuda --model gpt2 --batch "$B" --steps 1 --warmup 0 \
    >"$csv" 2>>"$out/bench.log"
  profile_rc=$?
  python3 - "$csv" "$B" <<'PY' >"$csv.table" 2>&1 || profile_rc=1
import csv, json, re, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
head, rows = rows[0], rows[1:]
name, value = head.index("Kernel Name"), head.index("Metric Value")
kernels = [(r[name], float(r[value].replace(",", ""))) for r in rows]  # in launch order, ns
bench = next((json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")), {})
first = next(k for k, (n, _) in enumerate(kernels) if "embedding_forward" in n)
last = max(k for k, (n, _) in enumerate(kernels) if "adamw" in n.lower())
step = kernels[first:last + 1]
def short(n):  # a kernel's name without its return type, namespaces and parameters
    n = re.sub(r"^void ", "", n.replace("(anonymous namespace)::", ""))
    n = re.sub(r"\([^()]*\)$", "", n)
    return re.sub(r"\b\w+::", "", n).strip()
total = {}
for n, t in step:
    s = short(n)
    c, ns = total.get(s, (0, 0.0))
    total[s] = (c + 1, ns + t)
busy = sum(t for _, t in step) / 1e6
print(f"one training step at gpt2 shapes, B={sys.argv[2]}: {len(step)} kernels, {busy:.1f} ms of kernel time; "
      f"the step took {bench.get('step_ms', float('nan')):.1f} ms of wall time under ncu "
      f"(without ncu see bench.log)")
print(f"{'kernel':60} {'launches':>8} {'ms':>8} {'share':>6}")
for s, (c, ns) in sorted(total.items(), key=lambda kv: -kv[1][1])[:25]:
    print(f"{s[:60]:60} {c:>8} {ns / 1e6:>8.2f} {100 * ns / 1e6 / busy:>5.1f}%")
PY
  tee -a "$out/bench.log" <"$csv.table" | tee -a "$out/summary.txt"
  rm -f "$csv" "$csv.table"
}
