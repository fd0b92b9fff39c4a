"""`optimus plan --precision bf16-mixed` against chapter 4's convention ("Precision"), derived here from
the same plan's fp32 ledgers, never from fixed totals:
  (a) memory: every category's peak and held bytes are the fp32 run's times (bytes per element) / 4 —
      parameters 6, gradients 4, optimizer 4, activations 2, communication 2, workspace 2 — and the held
      total is their sum; collectives: each communicator's bytes times 4/4 on "data" and 2/4 on every other,
      the same calls. For serial, 1d on 2 ranks, 2d on 2x2, and 1d on 2 ranks x 2 data-parallel copies.
  (b) time: on a toy profile (fp32 products 1 GFLOP/s, bf16 16 GFLOP/s, memory 1 GB/s) the serial step's
      products take the hand-counted FLOPs at 16 GFLOP/s, the memory-bound kinds half their fp32 time, AdamW
      the same time.
  (c) refusals: an unknown --precision, and bf16-mixed on a profile without bf16 rates, each one sentence
      and a non-zero exit.
usage: check_precision.py OPTIMUS
"""
import json
import os
import subprocess
import sys
import tempfile

BYTES = {"parameters": 6, "gradients": 4, "optimizer": 4, "activations": 2, "communication": 2, "workspace": 2}
SHAPE = ["--layers", "2", "--embd", "32", "--heads", "2", "--seq", "16", "--vocab", "64", "--batch", "4"]


def plan(optimus, *args):
    out = subprocess.run([optimus, "plan", *SHAPE, "--json", *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def check_ledgers(optimus, layout, ranks, copies):
    args = ["--layout", layout, "--ranks", str(ranks), "--data-parallel", str(copies)]
    fp32, bf16 = plan(optimus, *args), plan(optimus, *args, "--precision", "bf16-mixed")
    assert fp32["precision"] == "fp32" and bf16["precision"] == "bf16-mixed"
    for a, b in zip(fp32["per_rank"], bf16["per_rank"], strict=True):
        held = 0
        for category, element in BYTES.items():
            for kind in ["peak_bytes", "held_bytes"]:
                expected = a["memory"][category][kind] * element // 4
                assert b["memory"][category][kind] == expected, (layout, a["rank"], category, kind, expected, b)
            held += b["memory"][category]["held_bytes"]
        assert b["memory"]["total"]["held_bytes"] == held, (layout, a["rank"], held)
        peaks = [b["memory"][c]["peak_bytes"] for c in BYTES]
        assert max(peaks) <= b["memory"]["total"]["peak_bytes"] <= sum(peaks), (layout, a["rank"], peaks)
        comm_a, comm_b = a["comm"] or {}, b["comm"] or {}  # serial: no communicator
        assert comm_a.keys() == comm_b.keys(), (layout, comm_a.keys(), comm_b.keys())
        for name, ops in comm_a.items():
            element = 4 if name == "data" else 2
            for op, count in ops.items():
                if op == "group_size":
                    continue
                got = comm_b[name][op]
                assert got == {"calls": count["calls"], "bytes": count["bytes"] * element // 4}, (layout, name, op, got)
    total = [r["memory"]["total"]["peak_bytes"] for r in bf16["per_rank"]]
    was = [r["memory"]["total"]["peak_bytes"] for r in fp32["per_rank"]]
    print(f"{layout} on {ranks} x {copies}: every category and collective at the convention's bytes "
          f"(peak of rank 0: {was[0]} B fp32, {total[0]} B bf16-mixed)")


def toy_profile(folder):
    number = lambda v: {"value": v, "source": "a test"}
    link = {"alpha_s": number(0), "beta_s_per_byte": number(0), "gamma_s_per_byte": number(0),
            "devices_per_link": number(1)}
    profile = {
        "name": "toy", "devices_per_node": number(1), "device_memory_bytes": number(1e12),
        "matmul_flops_per_s": [{"min_dim_at_most": None, "value": 1e9, "source": "a test"}],
        "matmul_bf16_flops_per_s": [{"min_dim_at_most": None, "value": 16e9, "source": "a test"}],
        "memory_bytes_per_s": number(1e9), "collective_launch_s": number(0),
        "links": {"intra_node": link, "inter_node": {**link, "nics_per_node": number(1)}},
        "collectives": {op: {"algorithm": "ring", "reason": "a test"}
                        for op in ["all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter"]},
    }
    path = os.path.join(folder, "toy.json")
    with open(path, "w") as f:
        json.dump(profile, f)
    return path


def check_time(optimus, folder):
    toy = toy_profile(folder)
    fp32 = plan(optimus, "--hardware", toy)["time"]["step"]["compute_by_kind_s"]
    bf16 = plan(optimus, "--hardware", toy, "--precision", "bf16-mixed")["time"]["step"]["compute_by_kind_s"]
    # The serial step's products by hand (L = 2, C = 32, N = B·T = 64, V = 64): each linear 2·N·K·M forward,
    # twice that backward; per block C→3C, C→C, C→4C, 4C→C; the tied LM head C→V.
    L, C, N, V = 2, 32, 4 * 16, 64
    matmul_flops = 3 * (L * 2 * N * (3 * C * C + C * C + 4 * C * C + 4 * C * C) + 2 * N * C * V)
    assert abs(bf16["matmul"] - matmul_flops / 16e9) < 1e-12, (bf16["matmul"], matmul_flops / 16e9)
    assert abs(fp32["matmul"] - matmul_flops / 1e9) < 1e-12, (fp32["matmul"], matmul_flops / 1e9)
    for kind in ["layernorm", "crossentropy", "elementwise", "reduction", "embedding"]:
        assert abs(bf16[kind] - fp32[kind] / 2) < 1e-12, (kind, fp32[kind], bf16[kind])
    assert bf16["optimizer"] == fp32["optimizer"] > 0, (fp32["optimizer"], bf16["optimizer"])
    print(f"toy profile: products {matmul_flops} FLOP at 16 GFLOP/s = {1e3 * bf16['matmul']:.6f} ms "
          f"(fp32 {1e3 * fp32['matmul']:.6f} ms); memory-bound kinds at half the bytes; AdamW unchanged")


def check_refused(optimus, args, sentence):
    run = subprocess.run([optimus, "plan", "--model", "tiny", *args], capture_output=True, text=True)
    errors = [line for line in (run.stdout + run.stderr).splitlines() if "error:" in line]
    assert run.returncode != 0 and len(errors) == 1 and sentence in errors[0], (args, run.returncode, errors)
    print(f"refused: {' '.join(args)}: {errors[0]}")


def main():
    optimus = sys.argv[1]
    for layout, ranks, copies in [("serial", 1, 1), ("1d", 2, 1), ("2d", 4, 1), ("1d", 2, 2)]:
        check_ledgers(optimus, layout, ranks, copies)
    with tempfile.TemporaryDirectory() as folder:
        check_time(optimus, folder)
    check_refused(optimus, ["--precision", "fp16"], "--precision must be fp32 or bf16-mixed, but is 'fp16'")
    check_refused(optimus, ["--precision", "bf16-mixed", "--hardware", "local"],
                  "hardware profile local has no matmul_bf16_flops_per_s")


if __name__ == "__main__":
    main()
