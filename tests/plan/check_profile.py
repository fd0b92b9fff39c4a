"""Checks that hardware profiles have every field of data/hardware/README.md's format, with the
right types: each number a {"value", "source"} pair, the matmul table by shape class, the optional
rates per kind of op, both links, and one known algorithm per collective. Not their values. Usage: check_profile.py PROFILE.json..."""
import json
import math
import sys

ALGORITHMS = {
    "all_reduce": {"ring"},
    "broadcast": {"ring", "binomial_tree", "scatter_allgather"},
    "reduce": {"ring", "binomial_tree"},
    "all_gather": {"ring"},
    "reduce_scatter": {"ring"},
}

OP_KINDS = {"attention", "layernorm", "crossentropy", "elementwise", "reduction", "embedding", "optimizer"}


def check_number(entry, where):
    assert isinstance(entry, dict), f"{where}: expected {{'value', 'source'}}, found {entry!r}"
    value = entry.get("value")
    assert isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value), \
        f"{where}.value: expected a finite number, found {value!r}"
    assert isinstance(entry.get("source"), str) and entry["source"].strip(), f"{where}.source: expected a note"


def check_profile(path):
    with open(path) as f:
        profile = json.load(f)
    assert isinstance(profile.get("name"), str) and profile["name"], f"{path}: no name"
    for key in ["devices_per_node", "device_memory_bytes", "memory_bytes_per_s", "collective_launch_s"]:
        check_number(profile.get(key), key)
    table = profile.get("matmul_flops_per_s")
    assert isinstance(table, list) and table, "matmul_flops_per_s: expected a list of shape classes"
    bounds = [row.get("min_dim_at_most") for row in table]
    assert bounds[-1] is None and all(isinstance(b, int) for b in bounds[:-1]) and bounds[:-1] == sorted(bounds[:-1]), \
        f"matmul_flops_per_s: bounds must rise and end with null (every larger shape), found {bounds}"
    for i, row in enumerate(table):
        check_number(row, f"matmul_flops_per_s[{i}]")
    bf16 = profile.get("matmul_bf16_flops_per_s")  # optional: the tensor-core rates --precision bf16-mixed reads
    if bf16 is not None:
        assert isinstance(bf16, list) and [row.get("min_dim_at_most") for row in bf16] == bounds, \
            "matmul_bf16_flops_per_s: expected matmul_flops_per_s's shape classes"
        for i, row in enumerate(bf16):
            check_number(row, f"matmul_bf16_flops_per_s[{i}]")
    rates = profile.get("op_rates", {})  # optional: scripts/calibrate's measured rate per kind of op
    assert isinstance(rates, dict), "op_rates: expected an object of op kinds"
    for kind, entry in rates.items():
        assert kind in OP_KINDS, f"op_rates.{kind}: expected one of {sorted(OP_KINDS)}"
        check_number(entry, f"op_rates.{kind}")
    for link in ["intra_node", "inter_node"]:
        keys = ["alpha_s", "beta_s_per_byte", "gamma_s_per_byte", "devices_per_link"]
        for key in keys + (["nics_per_node"] if link == "inter_node" else []):
            check_number(profile.get("links", {}).get(link, {}).get(key), f"links.{link}.{key}")
    for op, allowed in ALGORITHMS.items():
        choice = profile.get("collectives", {}).get(op, {})
        assert choice.get("algorithm") in allowed, f"collectives.{op}.algorithm: expected one of {sorted(allowed)}"
        assert isinstance(choice.get("reason"), str) and choice["reason"], f"collectives.{op}.reason: expected a line"
    return profile["name"]


for path in sys.argv[1:]:
    try:
        print(f"{path}: profile '{check_profile(path)}' has every field")
    except AssertionError as e:
        sys.exit(f"FAIL {path}: {e}")
