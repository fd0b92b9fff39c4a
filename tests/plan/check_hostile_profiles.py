"""Hostile hardware profiles and sizes, refused in one sentence: each case takes a committed profile,
changes one field to a value out of data/hardware/README.md's ranges (a device memory past int64, link
costs of ±1e300, a negative measured intercept, a rate of 1e-300, devices_per_node of 1e300 or 3e9, …),
runs `optimus plan --hardware` on it, and checks a non-zero exit, exactly one `error:` line, naming the
file and the field, and no signal or exception dump. Then the values at the ranges' edges are accepted,
and their report has every line whole: finite, non-negative times and the "slowest rank" line complete.
Last, the size refusals of `optimus plan` (--embd 2147483647 --heads 1, …) the same way.

usage: check_hostile_profiles.py OPTIMUS HARDWARE_DIR
"""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

SMALL = ["--layers", "1", "--embd", "8", "--heads", "2", "--seq", "4", "--vocab", "16", "--batch", "2"]


def set_field(profile, path, value):
    """path like 'links.intra_node.alpha_s.value' or 'matmul_flops_per_s.0.value'."""
    keys = path.split(".")
    node = profile
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def run(optimus, args):
    p = subprocess.run([optimus, "plan"] + args, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def check_refused(optimus, args, names, what):
    code, out = run(optimus, args)
    errors = [line for line in out.splitlines() if "error:" in line]
    problems = []
    if code == 0:
        problems.append("exit code 0")
    if len(errors) != 1:
        problems.append(f"{len(errors)} error lines")
    elif names not in errors[0]:
        problems.append(f"the error line does not name {names!r}")
    for dump in ["Signal", "terminate called", "logic_error", "bad_alloc", "Aborted"]:
        if dump in out:
            problems.append(f"'{dump}' in the output")
    if problems:
        print(f"FAIL {what}: {', '.join(problems)}; output:\n{out[:2000]}")
        return False
    print(f"ok   {what}: exit {code}, {errors[0][:200]}")
    return True


def check_accepted(optimus, args, what):
    code, out = run(optimus, args)
    problems = []
    if code != 0:
        problems.append(f"exit code {code}")
    if re.search(r"\binf\b|\bnan\b", out):
        problems.append("inf or nan in the report")
    if re.search(r"time of \S+\s+-", out):
        problems.append("a negative time")
    if not re.search(r"^slowest rank: \d+ \(step [0-9.]+ ms, forward [0-9.]+ ms\)$", out, re.M):
        problems.append("no whole 'slowest rank' line")
    if not re.search(r"^largest batch that fits .* per device: \S+", out, re.M):
        problems.append("no 'largest batch' line of its own")
    if problems:
        print(f"FAIL {what}: {', '.join(problems)}; output:\n{out[-2000:]}")
        return False
    slowest = re.search(r"^slowest rank: .*$", out, re.M).group(0)
    print(f"ok   {what}: exit 0, {slowest[:160]}")
    return True


def main():
    optimus, hardware_dir = sys.argv[1], sys.argv[2]
    with open(os.path.join(hardware_dir, "local.json")) as f:
        local = json.load(f)
    fit = "measurements.collective_fits.2.all_reduce"
    hostile = [
        ("device_memory_bytes.value", 9.3e18, "device_memory_bytes"),
        ("device_memory_bytes.value", 1e300, "device_memory_bytes"),
        ("device_memory_bytes.value", 2.5, "device_memory_bytes"),
        ("links.intra_node.alpha_s.value", 1e300, "links.intra_node.alpha_s"),
        ("links.intra_node.alpha_s.value", -1e300, "links.intra_node.alpha_s"),
        ("links.inter_node.beta_s_per_byte.value", 1e300, "links.inter_node.beta_s_per_byte"),
        ("links.intra_node.beta_s_per_byte.value", -1e300, "links.intra_node.beta_s_per_byte"),
        ("links.intra_node.gamma_s_per_byte.value", -1e-9, "links.intra_node.gamma_s_per_byte"),
        (f"{fit}.alpha_s", -2e-6, f"{fit}.alpha_s"),
        (f"{fit}.beta_s_per_byte", -1e-10, f"{fit}.beta_s_per_byte"),
        (f"{fit}.alpha_s", 1e300, f"{fit}.alpha_s"),
        ("matmul_flops_per_s.0.value", 1e-300, "matmul_flops_per_s[0].value"),
        ("matmul_flops_per_s.2.value", 1e300, "matmul_flops_per_s[2].value"),
        ("memory_bytes_per_s.value", 1e-300, "memory_bytes_per_s"),
        ("op_rates.attention.value", 1e-300, "op_rates.attention"),
        ("collective_launch_s.value", -1.0, "collective_launch_s"),
        ("devices_per_node.value", 1e300, "devices_per_node must be a whole number from 1 to 1048576"),
        ("devices_per_node.value", 3e9, "devices_per_node must be a whole number from 1 to 1048576"),
        ("devices_per_node.value", 1.5, "devices_per_node must be a whole number"),
        ("links.inter_node.nics_per_node.value", 0, "links.inter_node.nics_per_node"),
        ("links.intra_node.devices_per_link.value", 2 ** 21, "links.intra_node.devices_per_link"),
    ]
    # The edges of the ranges, all at once: accepted, and the report's lines whole.
    edges = [
        ("device_memory_bytes.value", 2 ** 50),
        ("links.intra_node.alpha_s.value", 1.0),
        ("links.intra_node.beta_s_per_byte.value", 1e-3),
        ("links.inter_node.alpha_s.value", 1.0),
        ("links.inter_node.beta_s_per_byte.value", 1e-3),
        ("matmul_flops_per_s.0.value", 1e3),
        ("memory_bytes_per_s.value", 1e3),
        ("op_rates.attention.value", 1e21),
        ("collective_launch_s.value", 1.0),
        (f"{fit}.alpha_s", 0.0),
        ("devices_per_node.value", 2 ** 20),
    ]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for k, (path, value, names) in enumerate(hostile):
            profile = copy.deepcopy(local)
            set_field(profile, path, value)
            file = os.path.join(tmp, f"hostile_{k}.json")
            with open(file, "w") as f:
                json.dump(profile, f)
            for extra in ([], ["--json"]):
                ok &= check_refused(optimus, SMALL + ["--hardware", file] + extra,
                                    f"hardware profile {file}: {names}", f"{path} = {value!r} {' '.join(extra)}")
        profile = copy.deepcopy(local)
        for path, value in edges:
            set_field(profile, path, value)
        file = os.path.join(tmp, "edges.json")
        with open(file, "w") as f:
            json.dump(profile, f)
        for layout in (["--layout", "serial"], ["--layout", "1d", "--ranks", "2"]):
            ok &= check_accepted(optimus, SMALL + layout + ["--hardware", file],
                                 f"every range's edge at once, {' '.join(layout)}")
        code, out = run(optimus, SMALL + ["--hardware", file, "--json"])
        memory = json.loads(out)["hardware"]["device_memory_bytes"] if code == 0 else None
        if memory != 2 ** 50:
            print(f"FAIL --json's device_memory_bytes is {memory}, not 2^50")
            ok = False
    sizes = [
        (["--embd", "2147483647", "--heads", "1"], "the MLP width 4C = 8589934588"),
        (["--layers", "2147483647"], "--layers) must be at most 16777216"),
        (["--seq", "2147483647"], "the attention scores (B, NH, T, T)"),
        (["--batch", "2147483647"], "B·T = 274877906816 tokens"),
        (["--vocab", "2147483647", "--layout", "1d", "--ranks", "2", "--heads", "2"], "can reach 2147483648"),
        (["--layout", "1d", "--ranks", "65536", "--data-parallel", "65536"], "a world of 4294967296 ranks"),
        (["--ranks-per-node", "2147483647"], "--ranks-per-node must be at most 16777216"),
    ]
    for args, names in sizes:
        ok &= check_refused(optimus, args, names, "plan " + " ".join(args))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
