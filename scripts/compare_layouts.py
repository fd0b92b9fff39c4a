"""The table of scripts/compare.sh: runs of one configuration in several layouts, compared tensor by
tensor against the first. Each run folder holds step_000001 ... step_0000K (model.safetensors,
gradients.safetensors) and metrics.jsonl, as `optimus train --checkpoint-interval 1 --keep 0
--save-gradients` writes them. Exits 1 when a layout is outside the equivalence tests' bars
(docs/equivalence.md). Usage: compare_layouts.py K LABEL=DIR [LABEL=DIR ...]"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import gpt_reference  # noqa: E402  (the chapter 1 reference's safetensors reader)


def rel(a, b):
    """‖a − b‖ / ‖b‖ in float64 (docs/equivalence.md); 0 when both are zero."""
    a, b = np.float64(a).ravel(), np.float64(b).ravel()
    den = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / den) if den > 0 else float(np.linalg.norm(a))


def tensors(run, step, name):
    return gpt_reference.read_safetensors(os.path.join(run, f"step_{step:06d}", name))[0]


def rows(t):
    """The tensor's rows of the table: c_attn.bias also by thirds, its key third (zero gradient in
    exact arithmetic: softmax ignores a constant added to every score) apart from Q and V."""
    for name, x in t.items():
        yield name, x
        if name.endswith("attn.c_attn.bias"):
            c = x.shape[0] // 3
            yield name + " (Q, V)", np.concatenate([x[:c], x[2 * c:]])
            yield name + " (K)", x[c:2 * c]


def main():
    steps = int(sys.argv[1])
    runs = [a.split("=", 1) for a in sys.argv[2:]]
    (ref_label, ref_dir), others = runs[0], runs[1:]
    labels = [label for label, _ in others]
    width = max(12, *(len(l) for l in labels))
    outside = []  # what exceeds the equivalence tests' bars (docs/equivalence.md)
    for what, step, file in (("gradients after step 1", 1, "gradients.safetensors"),
                             (f"weights after step {steps}", steps, "model.safetensors")):
        ref = dict(rows(tensors(ref_dir, step, file)))
        got = [dict(rows(tensors(d, step, file))) for _, d in others]
        print(f"\n{what}: relative error ‖x − x_{ref_label}‖ / ‖x_{ref_label}‖ per canonical tensor")
        print(f"{'tensor':46}" + "".join(f"{l:>{width + 2}}" for l in labels))
        worst = [0.0] * len(others)
        for name in ref:
            errs = [rel(g[name], ref[name]) for g in got]
            if not name.endswith(" (K)") and not (name.endswith("c_attn.bias") and "(" not in name):
                worst = [max(w, e) for w, e in zip(worst, errs)]
            print(f"{name:46}" + "".join(f"{e:>{width + 2}.2e}" for e in errs))
        print(f"{'worst (c_attn.bias by its Q, V rows)':46}" + "".join(f"{w:>{width + 2}.2e}" for w in worst))
        outside += [f"{what} in {l}: {w:.2e} > 1e-4" for l, w in zip(labels, worst) if w > 1e-4]

    def losses(d):
        with open(os.path.join(d, "metrics.jsonl")) as f:
            return {m["step"]: m["train_loss"] for m in map(json.loads, f) if "train_loss" in m}

    ref_loss, got_loss = losses(ref_dir), [losses(d) for _, d in others]
    print("\nloss trajectories (train loss per step)")
    print(f"{'step':>4} {ref_label:>12}" + "".join(f"{l:>{width + 2}} {'rel. diff':>9}" for l in labels))
    for s in sorted(ref_loss):
        line = f"{s:>4} {ref_loss[s]:>12.6f}"
        for l, g in zip(labels, got_loss):
            e = abs(g[s] - ref_loss[s]) / abs(ref_loss[s])
            line += f"{g[s]:>{width + 2}.6f} {e:>9.1e}"
            if e > 1e-5:
                outside.append(f"the loss of step {s} in {l}: {e:.1e} > 1e-5")
        print(line)
    print("\n(The key third of c_attn.bias has a gradient of zero in exact arithmetic, so its computed gradient "
          "is round-off that differs between layouts; see chapter 3, \"The key bias\". The equivalence tests' bars: "
          "gradients ≤ 1e-4, weights after 5 steps ≤ 1e-4, losses ≤ 1e-5.)")
    if outside:
        print("compare: OUTSIDE the equivalence tests' bars: " + "; ".join(outside))
        sys.exit(1)
    print(f"compare: every layout agrees with {ref_label} within the equivalence tests' bars")


if __name__ == "__main__":
    main()
