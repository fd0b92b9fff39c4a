#!/bin/bash
# optimus plan on GPT-3 175B's shapes on a 32×32 grid (1024 ranks) finishes in one process and
# prints what it promises: the tables (memory by category, ops by kind, each communicator with its
# group size, the busiest rank) and, with --json, the same as keys; with --hardware, the time
# model's keys for the step and the forward pass, and a largest batch whose step fits the
# profile's device memory while one more row of the grid does not. Not its own timing. Then 3D on
# a 16×16×16 cube (4096 ranks; GPT-3's 96 heads split by q = 16, C = 12288 by q² = 256): the cube's
# three lines of 16 ranks in the tables and the JSON, and a largest batch that is a multiple of q².
# Usage: run_plan.sh OPTIMUS
set -euo pipefail
optimus=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shape=(--layout 2d --ranks 1024 --layers 96 --embd 12288 --heads 96 --seq 2048 --vocab 50257)

text=$("$optimus" plan "${shape[@]}" --batch 32)
for expected in "^plan: layout 2d on 1024 ranks" "no time model" "^rank 0$" "^rank 1023$" \
  "^    activations " "^    matmul  *calls" "^    row    (32 ranks) broadcast" "^    col    (32 ranks) reduce " \
  "^    world  (1024 ranks) all_reduce" "^busiest rank: 0 "; do
  if ! grep -q -- "$expected" <<<"$text"; then
    echo "FAIL: the table has no line matching '$expected':"
    echo "$text"
    exit 1
  fi
done

"$optimus" plan "${shape[@]}" --batch 32 --json | python3 -c '
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
'''

"$optimus" plan "${shape[@]}" --batch 32 --hardware h200-nvlink --json >"$tmp/timed.json"
largest=$(python3 - "$tmp/timed.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
assert plan["hardware"]["name"] == "h200-nvlink" and plan["hardware"]["ranks_per_node"] == 8, plan["hardware"]
for part in ["step", "forward"]:
    t = plan["time"][part]
    assert t["total_s"] > 0 and abs(t["compute_s"] + t["communication_s"] - t["hidden_s"] - t["total_s"]) < 1e-9 * t["total_s"]
    assert abs(sum(t["compute_by_kind_s"].values()) - t["compute_s"]) < 1e-9 * t["compute_s"]
    assert abs(sum(c["seconds"] for c in t["communication"]) - t["communication_s"]) < 1e-9 * t["communication_s"]
    links = {(c["communicator"], c["link"]) for c in t["communication"]}
    assert ("row", "inter_node") in links and ("col", "inter_node") in links, links  # q = 32 > 8 per node
assert plan["time"]["forward"]["total_s"] < plan["time"]["step"]["total_s"]
print(plan["largest_batch"])
PY
)
# The largest batch fits the device (141 GB), and one more row of the grid's sequences does not.
for batch in "$largest" $((largest + 32)); do
  "$optimus" plan "${shape[@]}" --batch "$batch" --json | python3 -c "
import json, sys
plan = json.load(sys.stdin)
peak = max(r['memory']['total']['peak_bytes'] for r in plan['per_rank'])
fits = peak <= json.load(open('$tmp/timed.json'))['hardware']['device_memory_bytes']
assert fits == ($batch == $largest), (plan['batch'], peak, fits)
"
done
echo "optimus plan --hardware h200-nvlink: times add up, links cross nodes, largest batch $largest fits and +32 does not"

cube=(--layout 3d --ranks 4096 --layers 96 --embd 12288 --heads 96 --seq 2048 --vocab 50257)
text=$("$optimus" plan "${cube[@]}" --batch 256)
for expected in "^plan: layout 3d on 4096 ranks" "^rank 4095$" "^    cube_row   (16 ranks) all_gather" \
  "^    cube_col   (16 ranks) reduce_scatter" "^    cube_depth (16 ranks) all_reduce" "^    world      (4096 ranks) all_reduce"; do
  if ! grep -q -- "$expected" <<<"$text"; then
    echo "FAIL: the 3d table has no line matching '$expected':"
    echo "$text"
    exit 1
  fi
done
"$optimus" plan "${cube[@]}" --batch 256 --hardware h200-nvlink --json | python3 -c '
import json, sys
plan = json.load(sys.stdin)
assert plan["layout"] == "3d" and plan["ranks"] == 4096, plan
for r in plan["per_rank"]:
    for line in ["cube_row", "cube_col", "cube_depth"]:
        assert r["comm"][line]["group_size"] == 16, (line, r["comm"][line])
        assert r["comm"][line]["all_gather"]["calls"] > 0 and r["comm"][line]["reduce_scatter"]["calls"] > 0, line
assert plan["time"]["step"]["total_s"] > plan["time"]["forward"]["total_s"] > 0
assert plan["largest_batch"] > 0 and plan["largest_batch"] % 256 == 0, plan["largest_batch"]
print("optimus plan: 3d on 4096 ranks, GPT-3 175B shapes: the cube lines in the tables and the JSON, largest batch",
      plan["largest_batch"])
'
