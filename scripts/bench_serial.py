#!/usr/bin/python3
"""The tables of scripts/bench.sh, and the merging of its rounds.

  bench_serial.py merge RAW OUT    RAW: the JSON lines of every round, each with its "round";
                                   OUT: one line per side, model and thread count (see below)
  bench_serial.py report FILE      the tables of a merged file

Merging keeps, for each (side, model, thread count), the line of the median round by step time (the
lower of the two middle ones for an even count, so that every number in a line comes from one run)
and adds "step_ms_rounds", the step time of every round in round order. PyTorch's line is one per
model, for its better thread count, and is chosen by that. The ratio of each round is PyTorch's
best step over ours in the same round; the table prints their median and range when there are
several rounds.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_args  # noqa: E402

MODELS = ("tiny", "small")


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def median_round(rows):
    """The row of the median step time (the lower middle one for an even count)."""
    middle = statistics.median_low(r["step_ms"] for r in rows)
    return next(r for r in rows if r["step_ms"] == middle)


def merge(raw_path, out_path):
    raw = read(raw_path)
    groups = {}
    for row in raw:
        if row.get("impl") == "optimus" and "threads" in row:
            groups.setdefault(("optimus", row["model"], row["threads"]), []).append(row)
        elif row.get("impl") == "pytorch-eager":
            groups.setdefault(("pytorch-eager", row["model"]), []).append(row)
    others = [r for r in raw if r.get("impl") == "optimus" and "threads" not in r]  # the block's op times
    with open(out_path, "w") as out:
        for rows in groups.values():
            rows.sort(key=lambda r: r["round"])
            kept = dict(median_round(rows))
            kept["step_ms_rounds"] = [r["step_ms"] for r in rows]
            del kept["round"]
            out.write(json.dumps(kept) + "\n")
        for row in others:
            row = dict(row)
            row.pop("round", None)
            out.write(json.dumps(row) + "\n")


def round_ratios(ours, torch):
    """PyTorch's best step over ours in each round (ours: the model's rows, one per thread count)."""
    rounds = len(torch["step_ms_rounds"])
    return [torch["step_ms_rounds"][k] / min(r["step_ms_rounds"][k] for r in ours) for k in range(rounds)]


def report(path):
    rows = read(path)
    print(f"\n{'model':6} {'impl':14} {'threads':>7} {'step ms':>9} {'fwd ms':>8} {'tok/s':>8} {'GFLOP/s':>8} "
          f"{'peak MiB':>9}")
    for model in MODELS:
        ours = [r for r in rows if r.get("impl") == "optimus" and r.get("model") == model]
        best = min(ours, key=lambda r: r["step_ms"])
        torch = next(r for r in rows if r.get("impl") == "pytorch-eager" and r["model"] == model)
        for r in ours:
            print(f"{model:6} {'optimus serial':14} {r['threads']:>7} {r['step_ms']:>9.1f} {r['forward_ms']:>8.1f} "
                  f"{r['tokens_per_s']:>8.0f} {r['gflops']:>8.1f} {r['peak_memory_mib']['total']:>9.1f}")
        gf = best["gflops"] * best["step_ms"] / torch["step_ms"]
        print(f"{model:6} {'pytorch eager':14} {torch['best_threads']:>7} {torch['step_ms']:>9.1f} "
              f"{torch['forward_ms']:>8.1f} {torch['tokens_per_s']:>8.0f} {gf:>8.1f} {'':>9}")
        print(f"{model:6} speed-up of our best over PyTorch's best: {torch['step_ms'] / best['step_ms']:.2f}x "
              f"(step), {torch['forward_ms'] / best['forward_ms']:.2f}x (forward); "
              f"its own matrix products (linears, LM head) alone at {best['matmul_gflops']:.0f} GFLOP/s, "
              f"model at {100 * best['fraction_of_matmul']:.0f}% of it")
        if len(torch.get("step_ms_rounds", [])) > 1:
            ratios = round_ratios(ours, torch)
            print(f"{model:6} PyTorch's step over ours, round by round: {', '.join(f'{x:.2f}' for x in ratios)}; "
                  f"median {statistics.median(ratios):.2f}x, lowest {min(ratios):.2f}x")
    ops = next(r for r in rows if "ops" in r)["ops"]
    total = sum(ops.values())
    top = sorted(ops.items(), key=lambda kv: -kv[1])[:5]
    print("\nwhere one tiny block's time goes (1 thread): " + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in top))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "merge":
        merge(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "report":  # scripts/bench.sh --report FILE
        script_args.jsonl_file("bench", "--report", sys.argv[2])
        script_args.tables("bench", "--report", sys.argv[2], report, sys.argv[2])
    else:
        script_args.fail("bench_serial.py", "usage: bench_serial.py merge RAW OUT | bench_serial.py report FILE")


if __name__ == "__main__":
    main()
