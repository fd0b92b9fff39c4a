#!/usr/bin/python3
"""scripts/bench.sh --rounds: scripts/bench_serial.py keeps each line of the median round and prints
each round's ratio; a --rounds that is not a whole number is refused in one sentence. The rows are
made up here, with step times chosen so that the answers can be worked out by hand."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
TABLE = os.path.join(ROOT, "scripts/bench_serial.py")


def ours(rnd, model, threads, step, forward):
    return {"round": rnd, "impl": "optimus", "model": model, "threads": threads, "step_ms": step,
            "forward_ms": forward, "tokens_per_s": 1.0, "gflops": 1.0, "matmul_gflops": 2.0,
            "fraction_of_matmul": 0.5, "peak_memory_mib": {"total": 1.0}}


def theirs(rnd, model, step):
    return {"round": rnd, "impl": "pytorch-eager", "model": model, "best_threads": 2, "step_ms": step,
            "forward_ms": step / 3, "tokens_per_s": 1.0}


# Two threads are ours' better count in every round; PyTorch takes 300, 330, 310 ms.
rows = []
for rnd, (one, two, torch) in enumerate([(400, 200, 300), (410, 220, 330), (390, 250, 310)], start=1):
    for model in ("tiny", "small"):
        rows += [ours(rnd, model, 1, one, 10 * rnd), ours(rnd, model, 2, two, 10 * rnd), theirs(rnd, model, torch)]
rows.append({"impl": "optimus", "what": "block ops ms, tiny block, 1 thread", "ops": {"fwd gelu": 1.0}})

failures = []
with tempfile.TemporaryDirectory() as tmp:
    raw, merged = os.path.join(tmp, "raw.jsonl"), os.path.join(tmp, "merged.jsonl")
    with open(raw, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    subprocess.run(["/usr/bin/python3", TABLE, "merge", raw, merged], check=True)
    kept = [json.loads(line) for line in open(merged)]
    two = next(r for r in kept if r.get("threads") == 2 and r["model"] == "small")
    # Two threads: 200, 220, 250 ms; the median is round 2's, whose forward time is 20.
    if two["step_ms"] != 220 or two["forward_ms"] != 20 or two["step_ms_rounds"] != [200, 220, 250]:
        failures.append(f"two-thread line: {two}")
    torch = next(r for r in kept if r["impl"] == "pytorch-eager" and r["model"] == "tiny")
    if torch["step_ms"] != 310 or torch["step_ms_rounds"] != [300, 330, 310]:
        failures.append(f"PyTorch line: {torch}")
    if "round" in two or len(kept) != 7:
        failures.append(f"{len(kept)} lines kept (7 expected), 'round' left in: {'round' in two}")
    printed = subprocess.run(["/usr/bin/python3", TABLE, "report", merged], check=True, capture_output=True,
                             text=True).stdout
    print(printed)
    # Rounds: 300/200 = 1.50, 330/220 = 1.50, 310/250 = 1.24; the medians' ratio 310/220 = 1.41.
    want = "PyTorch's step over ours, round by round: 1.50, 1.50, 1.24; median 1.50x, lowest 1.24x"
    if sum(want in line for line in printed.splitlines()) != 2 or "best: 1.41x (step)" not in printed:
        failures.append("the report's ratios are not 1.50, 1.50, 1.24 (median 1.50) and 1.41 for both models")

bad = subprocess.run(["/bin/bash", os.path.join(ROOT, "scripts/bench.sh"), "--rounds", "two"], capture_output=True,
                     text=True)
print(bad.stderr)
if bad.returncode == 0 or len(bad.stderr.strip().splitlines()) != 1 or "--rounds" not in bad.stderr:
    failures.append(f"--rounds two: exit {bad.returncode}, {bad.stderr!r}")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
