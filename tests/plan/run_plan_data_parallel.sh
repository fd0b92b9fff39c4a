#!/bin/bash
# optimus plan --data-parallel D: the planner's data-parallel all-reduce is the one the benchmark
# (and so the trainer) records — the same calls and bytes, the loss's 8-byte sum included, since
# both run the trainer's step; world ranks d·P + t with nodes filled in rank order put a copy's grid on one node
# and its data group across nodes; with --overlap the time model hides all but the last three buckets
# (gpt2: 14 buckets; tiny: 6).
# Usage: run_plan_data_parallel.sh OPTIMUS MPIEXEC
set -euo pipefail
optimus=$1 mpiexec=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$optimus" plan --layout serial --ranks 1 --data-parallel 2 --model tiny --batch 4 --json >"$tmp/plan.json"
"$mpiexec" -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 "$optimus" bench --data-parallel 2 --model tiny \
  --batch 4 --steps 1 --warmup 0 >"$tmp/bench.json"
"$optimus" plan --layout 2d --ranks 4 --data-parallel 2 --model tiny --batch 8 --hardware local \
  --ranks-per-node 4 --json >"$tmp/grid.json"
"$optimus" plan --layout serial --ranks 1 --data-parallel 2 --model gpt2 --batch 2 --hardware local \
  --ranks-per-node 2 --overlap --json >"$tmp/gpt2.json"
"$optimus" plan --layout serial --ranks 1 --data-parallel 2 --model tiny --batch 4 --hardware local \
  --ranks-per-node 2 --overlap --json >"$tmp/tiny.json"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
load = lambda name: json.load(open(f"{d}/{name}.json"))
plan, bench = load("plan"), json.loads(open(f"{d}/bench.json").read().strip().splitlines()[-1])
assert plan["data_parallel"] == 2 and plan["world"] == 2, plan
assert [r["rank"] for r in plan["per_rank"]] == [0, 1]
planned = plan["per_rank"][0]["comm"]["data"]
measured = bench["comm_per_step"]["data.all_reduce"]
assert planned["group_size"] == 2
assert planned["all_reduce"]["bytes"] == 4 * plan["model"]["parameters"] + 8, planned  # gradients, the loss
assert measured == planned["all_reduce"], (measured, planned)
print(f"data all-reduce: plan {planned['all_reduce']}, bench {measured} (the gradients and the loss's 8 bytes)")

grid = load("grid")
assert [r["rank"] for r in grid["per_rank"]] == list(range(8))
for r in grid["per_rank"]:
    links = {c["communicator"]: c["link"] for c in r["time"]["step"]["communication"]}
    assert links["data"] == "inter_node" and links["row"] == links["col"] == links["model"] == "intra_node", links
    assert r["comm"]["data"]["group_size"] == 2 and r["comm"]["row"]["group_size"] == 2
print("2d x 2 on 2 nodes of 4: the grids stay on their nodes, the data groups cross")

for name, hides in (("gpt2", True), ("tiny", True)):
    t = load(name)["time"]["step"]
    calls = sum(c["calls"] for c in t["communication"] if c["communicator"] == "data")
    data_s = sum(c["seconds"] for c in t["communication"] if c["communicator"] == "data")
    assert abs(t["compute_s"] + t["communication_s"] - t["hidden_s"] - t["total_s"]) < 1e-9 * t["total_s"]
    assert t["hidden_s"] == t["hidden_data_parallel_s"]  # serial: no SUMMA
    assert (t["hidden_data_parallel_s"] > 0) == hides, (name, t["hidden_data_parallel_s"])
    assert t["hidden_data_parallel_s"] <= data_s * (calls - 3) / calls + 1e-12
    print(f"{name}: {calls} bucket(s), all-reduce {1e3 * data_s:.3f} ms, hidden {1e3 * t['hidden_data_parallel_s']:.3f} ms")
PY
echo "optimus plan --data-parallel: the bench's all-reduce, placed by rank, hidden but its last three buckets"
