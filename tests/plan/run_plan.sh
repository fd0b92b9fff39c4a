#!/bin/bash
# optimus plan on GPT-3 175B's shapes on a 32×32 grid (1024 ranks) finishes in one process and
# prints what it promises: the tables (memory by category, ops by kind, each communicator with its
# group size, the busiest rank) and, with --json, the same as keys. Not its timing.
# Usage: run_plan.sh OPTIMUS
set -euo pipefail
optimus=$1
shape=(--layout 2d --ranks 1024 --layers 96 --embd 12288 --heads 96 --seq 2048 --vocab 50257 --batch 32)

text=$("$optimus" plan "${shape[@]}")
for expected in "^plan: layout 2d on 1024 ranks" "no time model" "^rank 0$" "^rank 1023$" \
  "^    activations " "^    matmul  *calls" "^    row    (32 ranks) broadcast" "^    col    (32 ranks) reduce " \
  "^    world  (1024 ranks) all_reduce" "^busiest rank: 0 "; do
  if ! grep -q -- "$expected" <<<"$text"; then
    echo "FAIL: the table has no line matching '$expected':"
    echo "$text"
    exit 1
  fi
done

"$optimus" plan "${shape[@]}" --json | python3 -c '
import json, sys
plan = json.load(sys.stdin)
assert plan["layout"] == "2d" and plan["ranks"] == 1024 and plan["busiest_rank"] == 0, plan
assert [r["rank"] for r in plan["per_rank"]] == [0, 1023], plan["per_rank"]
for r in plan["per_rank"]:
    for category in ["parameters", "gradients", "optimizer", "activations", "communication", "workspace", "total"]:
        assert r["memory"][category]["peak_bytes"] >= r["memory"][category]["held_bytes"] >= 0, category
    assert r["memory"]["parameters"]["held_bytes"] > 0
    for kind in ["matmul", "attention", "layernorm", "crossentropy", "elementwise", "reduction", "embedding", "optimizer"]:
        assert r["ops"][kind]["calls"] > 0 and r["ops"][kind]["flops"] > 0, kind
    assert r["comm"]["row"]["group_size"] == 32 and r["comm"]["col"]["group_size"] == 32
    assert r["comm"]["world"]["group_size"] == 1024
    assert r["comm"]["row"]["broadcast"]["calls"] > 0 and r["comm"]["col"]["reduce"]["bytes"] > 0
print("optimus plan: 2d on 1024 ranks, GPT-3 175B shapes: tables and JSON keys as promised")
'
