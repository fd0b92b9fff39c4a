#!/bin/bash
# optimus plan of a 10 000-block model in seconds: building the model and its step on the meta device
# are linear in the blocks (a parameter's name was looked up in the list of all 12·L + 5: GPT-3's
# widths on 1024 ranks took 400 s at 10 000 blocks, and 20 minutes with --hardware). What it prints
# is that model's: every block is the same, so each ledger entry that grows with the blocks is, at
# 10 000 blocks, its value at one block plus 9 999 times what a second block adds. With --hardware
# (at a width whose largest-batch search probes a few batches), the time model's keys and a batch.
# Usage: run_plan_many_layers.sh OPTIMUS
set -euo pipefail
optimus=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shape=(--layout 2d --ranks 1024 --embd 12288 --heads 96 --seq 2048 --vocab 50257 --batch 32 --json)
for L in 1 2 10000; do
  "$optimus" plan "${shape[@]}" --layers "$L" >"$tmp/$L.json"
done
"$optimus" plan --layout 2d --ranks 1024 --embd 1024 --heads 32 --seq 128 --vocab 50257 --batch 32 --layers 10000 \
  --hardware h200-nvlink --json >"$tmp/hardware.json"

/usr/bin/python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
one, two, many = (json.load(open(f"{tmp}/{L}.json")) for L in (1, 2, 10000))
assert many["model"]["n_layer"] == 10000, many["model"]
checked = 0
for r1, r2, r in zip(one["per_rank"], two["per_rank"], many["per_rank"]):
    assert r1["rank"] == r2["rank"] == r["rank"]
    values = [("memory", c, "held_bytes") for c in ("parameters", "gradients", "optimizer")]
    values += [("ops", k, f) for k in ("matmul", "layernorm", "attention") for f in ("calls", "flops")]
    for a, b, c in values:
        v1, v2, v = r1[a][b][c], r2[a][b][c], r[a][b][c]
        assert v == v1 + 9999 * (v2 - v1), (r["rank"], a, b, c, v1, v2, v)
        checked += 1
print(f"10 000 blocks: {checked} ledger entries of {len(many['per_rank'])} ranks are one block's plus 9 999 more")
hardware = json.load(open(f"{tmp}/hardware.json"))
assert hardware["time"]["step"]["total_s"] > 0 and hardware["largest_batch"] > 0, hardware["largest_batch"]
print(f"with --hardware h200-nvlink: a step {hardware['time']['step']['total_s']:.3f} s, largest batch "
      f"{hardware['largest_batch']}")
PY
