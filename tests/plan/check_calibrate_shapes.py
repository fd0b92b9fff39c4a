#!/usr/bin/python3
"""scripts/calibrate measures the products the model itself runs: for each case it measures, the
FLOPs of its list of linear and LM-head products equal the planner's matmul FLOPs of rank 0 exactly,
and its attention products are the attention ops' FLOPs less their softmax and masking (within 2 %).
Counts only; nothing is timed.

Usage: check_calibrate_shapes.py SOURCE_DIR OPTIMUS
"""
import importlib.machinery
import json
import os
import subprocess
import sys

source, optimus = sys.argv[1:]
calibrate = importlib.machinery.SourceFileLoader("calibrate", os.path.join(source, "scripts/calibrate")).load_module()
failed = False
for model, batch in [("tiny", 8), ("gpt2", 2)]:
    for layout, p in calibrate.CASES:
        products = calibrate.step_products(model, batch, layout, p)
        head = products[-6:]  # attention's six per head come last
        matmul_flops = sum(2 * m * n * k * c for m, n, k, _, c in products[:-6])
        attention_flops = sum(2 * m * n * k * c for m, n, k, _, c in head)
        cmd = [optimus, "plan", "--layout", layout, "--ranks", str(p), "--model", model, "--batch", str(batch), "--json"]
        ops = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["per_rank"][0]["ops"]
        ok = matmul_flops == ops["matmul"]["flops"] and attention_flops <= ops["attention"]["flops"] <= 1.02 * attention_flops
        failed |= not ok
        print(f"{'ok' if ok else 'FAIL'} {model} B={batch} {layout} p={p}: calibrate's products {matmul_flops} matmul "
              f"FLOPs (planner {ops['matmul']['flops']}), {attention_flops} attention (planner {ops['attention']['flops']})")
sys.exit(1 if failed else 0)
