"""The serial GPT's training step, counted by hand (chapter 4, "What a step costs, counted by hand"),
against what `optimus plan --layout serial` records on the meta device: the FLOPs of every kind of
op must be equal, exactly. The formulas here are written from the ops' cost conventions
(src/core/op_ledger.h) and the order of the serial model's calls (src/serial/gpt.cpp); they share no
code with the program they check.

usage: check_analytic_flops.py OPTIMUS
"""
import json
import subprocess
import sys


def analytic(L, C, NH, T, V, B, dropout, P):
    """FLOPs per kind of one step: forward (training mode), backward, gradient norm (no scaling), AdamW."""
    N, F, d = B * T, 4 * C, 1 if dropout > 0 else 0
    return {
        # Each linear (K inputs, M outputs) is 2·N·K·M forward and twice that backward; the tied LM
        # head (C to V) likewise. Per block: c_attn C→3C, attn proj C→C, c_fc C→F, mlp proj F→C.
        "matmul": 3 * (L * 2 * N * (C * 3 * C + C * C + C * F + F * C) + 2 * N * C * V),
        # Dense causal attention per (sequence, head): 4·T²·HS + 5·T² (+T² dropout) forward,
        # 8·T²·HS + 4·T² (+3·T² dropout) backward.
        "attention": L * B * NH * (12 * T * T * (C // NH) + 9 * T * T + 4 * d * T * T),
        # 2L + 1 LayerNorms: N(8C + 6) forward (row sums, squared deviations, normalise), N(19C + 2)
        # backward (the two row sums, then dx, dweight, dbias).
        "layernorm": (2 * L + 1) * N * (27 * C + 8),
        # Row maximum NV, exponent sum 3NV, losses 3N; backward N(6V + 1).
        "crossentropy": 10 * N * V + 4 * N,
        # Per block: bias adds N(5C + F), two residual adds 2NC, GELU 9NF forward and 21NF backward,
        # two dropouts (NC each with p > 0 forward; 2NC with p > 0, else NC, backward); and the
        # embedding's dropout.
        "elementwise": L * (N * (5 * C + F) + 2 * N * C + 30 * N * F + 2 * N * C * (1 + 2 * d)) + N * C * (1 + 2 * d),
        # Bias gradients N(5C + F) per block, the loss sum N, the gradient norm's squares 2P.
        "reduction": L * N * (5 * C + F) + N + 2 * P,
        # Position add forward NC; token and position scatter-adds backward 2NC.
        "embedding": 3 * N * C,
        # AdamW: 14 per parameter.
        "optimizer": 14 * P,
    }


def main():
    optimus = sys.argv[1]
    shapes = [dict(L=2, C=48, NH=3, T=7, V=101, B=3, dropout=0.0),
              dict(L=3, C=64, NH=4, T=16, V=257, B=5, dropout=0.1),
              dict(L=1, C=36, NH=12, T=9, V=50, B=2, dropout=0.25)]
    for s in shapes:
        cmd = [optimus, "plan", "--layout", "serial", "--layers", str(s["L"]), "--embd", str(s["C"]), "--heads",
               str(s["NH"]), "--seq", str(s["T"]), "--vocab", str(s["V"]), "--batch", str(s["B"]), "--dropout",
               str(s["dropout"]), "--json"]
        plan = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        ops = plan["per_rank"][0]["ops"]
        expected = analytic(**s, P=plan["model"]["parameters"])
        wrong = {k: (ops[k]["flops"], v) for k, v in expected.items() if ops[k]["flops"] != v}
        if wrong:
            print(f"FAIL: {s}: (meta, analytic) FLOPs differ for {wrong}")
            return 1
        total = sum(expected.values())
        print(f"serial L{s['L']} C{s['C']} NH{s['NH']} T{s['T']} V{s['V']} B{s['B']} dropout {s['dropout']}: "
              f"every kind equal, {total} FLOPs in all ({100 * expected['matmul'] / total:.1f} % in products)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
