"""2.5D tensor parallelism (Tesseract) is 2D x data parallelism over its depth (docs/tesseract.md).

For (q, d) = (2, 2), (2, 4), (3, 2), rank 0's ledger from `optimus plan --layout 2d --ranks q*q --data-parallel d`
is compared, communicator by communicator and call by call, with formulas written here from Colossal-AI's legacy
2.5D code (colossalai/legacy/nn/layer/parallel_2p5d/_operation.py, layers.py, legacy/nn/loss/loss_2p5d.py) for
one depth layer of B/d sequences, plus the sum over depth of the replicated weights' gradients that Tesseract needs
(and Colossal-AI's code lacks), plus the page's short list of differences. Never a value printed by optimus.
A second check: the grid's own ledger (row, col) at --data-parallel d equals 2D's at --batch B/d.
usage: check_tesseract.py OPTIMUS
"""
import json
import subprocess
import sys
from collections import defaultdict

L, T = 2, 16  # blocks, sequence length; C, NH, V and the batch B are per case
CASES = [  # q, d, C, NH, V, B
    (2, 2, 64, 4, 64, 8),
    (2, 4, 64, 4, 64, 32),
    (3, 2, 144, 6, 96, 12),
]
FLOAT = 4  # bytes


def plan(optimus, q, d, C, NH, V, B):
    args = ["plan", "--layout", "2d", "--ranks", str(q * q), "--data-parallel", str(d), "--layers", str(L),
            "--embd", str(C), "--heads", str(NH), "--seq", str(T), "--vocab", str(V), "--batch", str(B), "--json"]
    out = subprocess.run([optimus, *args], check=True, capture_output=True, text=True).stdout
    comm = json.loads(out)["per_rank"][0]["comm"]
    ledger = {}
    for group, ops in comm.items():
        for op, count in ops.items():
            if op not in ("group_size", "split"):  # split: building the communicators, not the step
                ledger[group, op] = (count["calls"], count["bytes"])
    return ledger, {group: ops["group_size"] for group, ops in comm.items()}


class Ledger(defaultdict):
    """(group, op) -> [calls, bytes] for one rank and one step."""

    def __init__(self):
        super().__init__(lambda: [0, 0])

    def add(self, group, op, calls, floats=0, nbytes=0):
        self[group, op][0] += calls
        self[group, op][1] += floats * FLOAT + nbytes

    def totals(self):
        return {key: tuple(value) for key, value in self.items() if value != [0, 0]}


def summa(ledger, product, M, N, K, q):
    """One Matmul_*_2p5D call: result (M, N), inner size K, on the q x q grid of one depth layer."""
    if product == "AB":  # q row broadcasts of A_it (M/q, K/q), q column broadcasts of B_tj (K/q, N/q)
        ledger.add("row", "broadcast", q, q * (M // q) * (K // q))
        ledger.add("col", "broadcast", q, q * (K // q) * (N // q))
    elif product == "ABT":  # q column broadcasts of B_tj (N/q, K/q), q row reduces of C_it (M/q, N/q)
        ledger.add("col", "broadcast", q, q * (N // q) * (K // q))
        ledger.add("row", "reduce", q, q * (M // q) * (N // q))
    elif product == "ATB":  # q row broadcasts of A_it (K/q, M/q), q column reduces of C_tj (M/q, N/q)
        ledger.add("row", "broadcast", q, q * (K // q) * (M // q))
        ledger.add("col", "reduce", q, q * (M // q) * (N // q))


def block_parameters(C):
    """(weights (K, O) of the four linears, bias widths, LayerNorm widths) of one block."""
    F = 4 * C
    return [(C, 3 * C), (C, C), (C, F), (F, C)], [3 * C, C, F, C], [C, C, C, C]  # ln_1 and ln_2: weight, bias


def colossal_2p5d(q, d, C, V, B):
    """One training step of rank (k, 0, 0), written from Colossal-AI's legacy 2.5D layers, with its depth layer
    holding B/d sequences, plus Tesseract's all-reduce over depth of the gradients of every weight it replicates."""
    N = B // d * T  # rows (tokens) of one depth layer
    ledger = Ledger()
    weights, biases, norms = block_parameters(C)
    # VocabParallelEmbedding2p5D: reduce-scatter of the (N, C/q) lookup over the column; backward an all-gather.
    ledger.add("col", "reduce_scatter", 1, N * C // q)
    ledger.add("col", "all_gather", 1, N * C // q)
    for _ in range(L):
        for K, O in weights:  # Linear2p5D: forward A·B; backward dX by A·Bᵀ, dW by Aᵀ·B
            summa(ledger, "AB", N, O, K, q)
            summa(ledger, "ABT", N, K, O, q)
            summa(ledger, "ATB", K, O, N, q)
    # Tied LM head (VocabParallelClassifier2p5D): logits by A·Bᵀ; backward dX by A·B, dW by Aᵀ·B.
    summa(ledger, "ABT", N, V, C, q)
    summa(ledger, "AB", N, C, V, q)
    summa(ledger, "ATB", V, C, N, q)
    # LayerNorm2p5D (2L + 1 of them): E[x] and E[x²] over the row; backward Σg and Σg·x̂, one call each.
    for _ in range(2 * L + 1):
        ledger.add("row", "all_reduce", 4, 4 * N // q)
    # add_bias_2p5d: every bias and LayerNorm weight or bias lives on grid row 0, broadcast down the column at
    # each use, its gradient reduced back to row 0.
    for width in biases * L + norms * L + [C, C]:
        ledger.add("col", "broadcast", 1, width // q)
        ledger.add("col", "reduce", 1, width // q)
    # VocabParallelCrossEntropyLoss2p5D: row max, target logit, Σexp; the blocks' mean over the column (fp32).
    ledger.add("row", "all_reduce", 3, 3 * N // q)
    ledger.add("col", "all_reduce", 1, nbytes=4)
    # Over depth: every rank's gradients, bucketed as data parallelism buckets them (one per block, wte with wpe,
    # ln_f). Colossal-AI's code has no such sum.
    local = V // q * C // q + L * (sum(K // q * O // q for K, O in weights) + sum(w // q for w in biases + norms))
    local += 2 * C // q
    ledger.add("data", "all_reduce", L + 2, local)
    return ledger


def ours_minus_2p5d(q, C):
    """The differences docs/tesseract.md lists, as (group, op) -> (calls, bytes) to add to colossal_2p5d's."""
    ledger = Ledger()
    _, biases, norms = block_parameters(C)
    replicated = biases * L + norms * L + [C, C]
    # Biases and LayerNorm parameters replicated down the column: no broadcast or reduce per use, one all-reduce
    # per step of their gradients and wpe's (T, C/q).
    for width in replicated:
        ledger.add("col", "broadcast", -1, -(width // q))
        ledger.add("col", "reduce", -1, -(width // q))
    ledger.add("col", "all_reduce", 1, sum(w // q for w in replicated) + T * C // q)
    # LayerNorm's backward sends Σg and Σg·x̂ in one call of 2N/q.
    ledger.add("row", "all_reduce", -(2 * L + 1))
    # The loss: a sum in double over the column (8 bytes, not 4), then over the copies.
    ledger.add("col", "all_reduce", 0, nbytes=4)
    ledger.add("data", "all_reduce", 1, nbytes=8)
    # wpe (T, C/q), which Colossal-AI's 2.5D layers do not have, is summed over the copies too.
    ledger.add("data", "all_reduce", 0, T * C // q)
    # The optimizer's gradient norm over the grid (8 bytes).
    ledger.add("model", "all_reduce", 1, nbytes=8)
    return ledger


def main(optimus):
    for q, d, C, NH, V, B in CASES:
        got, sizes = plan(optimus, q, d, C, NH, V, B)
        assert sizes["row"] == sizes["col"] == q and sizes["data"] == d and sizes["model"] == q * q, sizes
        expected = colossal_2p5d(q, d, C, V, B)
        for key, (calls, nbytes) in ours_minus_2p5d(q, C).items():
            expected.add(*key, calls, nbytes=nbytes)
        expected = expected.totals()
        for key in sorted(set(got) | set(expected)):
            assert got.get(key) == expected.get(key), f"q={q} d={d} {key}: plan {got.get(key)}, formula {expected.get(key)}"
        grid = {key: value for key, value in got.items() if key[0] in ("row", "col")}
        alone, _ = plan(optimus, q, 1, C, NH, V, B // d)
        assert grid == {key: value for key, value in alone.items() if key[0] in ("row", "col")}, (grid, alone)
        summary = ", ".join(f"{g}.{op} {c} calls {b} B" for (g, op), (c, b) in sorted(got.items()))
        print(f"q={q} d={d} B={B}: the plan equals the 2.5D formulas plus the listed differences: {summary}")
        print(f"q={q} d={d} B={B}: its row and col ledgers are 2d's at batch {B // d}")


if __name__ == "__main__":
    main(sys.argv[1])
