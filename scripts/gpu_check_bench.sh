# The GPU check's benchmark step (sourced by scripts/gpu_check.sh, which defines log, cap, $out,
# $build, $root and dry_run): stage 1 on GPT-2 124M's shapes (C=768, L=12, NH=12, T=1024, V=50304,
# B=$GPU_CHECK_BATCH, default 8) with `optimus bench --device cuda` (which first measures the float32
# rate of the model's own matrix products through cuBLAS, matmul_gflops), then the same model in PyTorch eager in the same run
# (scripts/bench_torch.py: float32, then TF32). Model FLOPs per token: 6·N + 6·L·C·T (N
# parameters, the tied head counted once), the formula of `optimus bench`. Writes bench.log and
# gpu.jsonl (one dated line per implementation, with the machine and the commit: the lines for
# bench/gpu.jsonl) under $out, the table with the row for bench/README.md into summary.txt, and
# sets bench_rc (0 when every run finished).

run_bench() {  # run_bench WHAT SECONDS COMMAND...: its JSON line(s) into $raw, its output into bench.log
  local what=$1 seconds=$2
  shift 2
  if ((seconds < 20)); then
    log "benchmark: no time left for $what"
    bench_rc=1
    return
  fi
  echo "+ $*" >>"$out/bench.log"
  if timeout "$seconds" "$@" >"$raw.one" 2>>"$out/bench.log"; then
    tee -a "$out/bench.log" <"$raw.one" | grep '^{' >>"$raw" || true
  else
    log "benchmark: $what FAILED or ran out of its $seconds s (bench.log)"
    cat "$raw.one" >>"$out/bench.log"
    bench_rc=1
  fi
}

gpu_check_bench() {
  local B=${GPU_CHECK_BATCH:-8} ours theirs python=${GPU_CHECK_PYTHON:-python3}
  # The python with PyTorch: there the image's python3; here Debian's, where python3 lacks it.
  if ! "$python" -c "import torch" 2>/dev/null && [[ -x /usr/bin/python3 ]]; then python=/usr/bin/python3; fi
  if ((dry_run)); then
    ours=(--device cpu --model tiny --batch 2 --steps 1 --warmup 0)
    theirs=(--device cpu --models tiny --batch 2 --steps 1 --warmup 0)
  else
    ours=(--device cuda --model gpt2 --batch "$B" --steps 5 --warmup 2)
    theirs=(--device cuda --models gpt2 --batch "$B" --steps 5 --warmup 2)
  fi
  bench_rc=0
  : >"$out/bench.log"
  raw=$(mktemp)
  OMP_NUM_THREADS=${OMP_NUM_THREADS:-8} run_bench "optimus" "$(cap 120)" "$build/optimus" bench "${ours[@]}"
  run_bench "pytorch float32" "$(cap 45)" "$python" "$root/scripts/bench_torch.py" "${theirs[@]}"
  if ((!dry_run)); then
    run_bench "pytorch tf32" "$(cap 45)" "$python" "$root/scripts/bench_torch.py" "${theirs[@]}" --tf32
  fi
  gpu_check_table "$raw" | tee -a "$out/summary.txt"
  rm -f "$raw" "$raw.one"
}

# One dated line per implementation (gpu.jsonl), and the table with the row for bench/README.md.
gpu_check_table() {
python3 - "$1" "$out/gpu.jsonl" "$out/gpu.txt" "$dry_run" <<'PY'
import json, os, sys
raw, jsonl, machine_file, dry = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
rows = [json.loads(l) for l in open(raw) if l.startswith("{")]
lines = open(machine_file).read().splitlines()
# nvidia-smi's query line "NVIDIA H200, <driver>, <memory> MiB, <clock> MHz, <mode>", else its -L line
gpu = next((l for l in lines if " MHz" in l), next((l for l in lines if l.startswith("GPU ")), "no GPU"))
stamp = lines[-1] if lines else ""
ours = next((r for r in rows if r.get("impl") == "optimus"), None)
if ours is None:
    print("gpu_check: no optimus benchmark line: nothing to report")
    open(jsonl, "w").close()
    sys.exit(0)
L, C, T, B = ours["L"], ours["C"], ours["T"], ours["B"]
flops_per_token = 6 * ours["params"] + 6 * L * C * T  # the formula of optimus bench
sgemm = ours["matmul_gflops"] / 1e3  # TFLOP/s: the model's products through cuBLAS, float32, measured first
common = {"date": stamp.split("; ")[1] if "; " in stamp else "", "machine": gpu,
          "commit": stamp.rsplit("commit ", 1)[-1], "model": ours["model"], "B": B, "T": T, "L": L, "C": C,
          "NH": ours["NH"], "V": ours["V"], "params": ours["params"], "flops_per_token": "6N + 6*L*C*T",
          "sgemm_fp32_tflops": round(sgemm, 2), "dry_run": dry}
out = []
for r in rows:
    name = "optimus serial" if r.get("impl") == "optimus" else f"pytorch eager {r.get('math', 'fp32')}"
    tflops = flops_per_token * r.get("B", B) * T / (r["step_ms"] * 1e-3) / 1e12
    peak = r["peak_memory_mib"]["total"] if isinstance(r.get("peak_memory_mib"), dict) else r.get("peak_memory_mib")
    out.append(dict(common, impl=name, step_ms=r["step_ms"], forward_ms=r["forward_ms"],
                    tokens_per_s=r["tokens_per_s"], tflops=round(tflops, 2),
                    fraction_of_sgemm=round(tflops / sgemm, 3), peak_memory_mib=peak))
with open(jsonl, "w") as f:
    for o in out:
        f.write(json.dumps(o) + "\n")
print(f"\nstage 1 on {ours['model']} shapes (L={L} C={C} NH={ours['NH']} T={T} V={ours['V']}), B={B}, "
      f"on {gpu}; its matrix products alone (fp32) {sgemm:.1f} TFLOP/s")
print(f"{'impl':22} {'step ms':>9} {'fwd ms':>8} {'tokens/s':>10} {'TFLOP/s':>8} {'of sgemm':>9} {'peak MiB':>9}")
for o in out:
    print(f"{o['impl']:22} {o['step_ms']:>9.1f} {o['forward_ms']:>8.1f} {o['tokens_per_s']:>10.0f} "
          f"{o['tflops']:>8.2f} {100 * o['fraction_of_sgemm']:>8.0f}% {o['peak_memory_mib'] or 0:>9.0f}")
torch32 = next((o for o in out if o["impl"] == "pytorch eager fp32"), None)
ratio = f"{torch32['step_ms'] / out[0]['step_ms']:.2f}x" if torch32 else "n/a"
print(f"PyTorch eager fp32 step time over ours: {ratio} (> 1: optimus is faster)")
print("\nTO COMMIT" + (" (a dry run: do NOT commit these)" if dry else "") + ":")
print(f"  append the lines of {os.path.basename(jsonl)} (beside this summary) to bench/gpu.jsonl, and this row to "
      "bench/README.md's GPU table:")
print(f"  | {common['date']} | {gpu} | {ours['model']} B={B} | {out[0]['step_ms']:.1f} | "
      f"{out[0]['tokens_per_s']:.0f} | {out[0]['tflops']:.2f} | {sgemm:.1f} | "
      f"{format(torch32['step_ms'], '.1f') if torch32 else 'n/a'} | {common['commit']} |")
PY
}
