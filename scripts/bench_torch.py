#!/usr/bin/python3
"""PyTorch eager baseline for the chapter 1 benchmark: the same GPT (pre-LN, tied LM head, GELU tanh,
causal attention written out as PyTorch users write it without fused kernels), float32, AdamW.
Prints one JSON line per model: median training-step time (forward + backward + AdamW) and forward
time over --steps steps after --warmup, for 1 and 2 threads, and the better of the two.
With --device cuda (scripts/gpu_check.sh): the same on the GPU, one run, each timed region between
two torch.cuda.synchronize() calls; float32 matrix products (TF32 off, as optimus computes) unless
--tf32; --batch overrides the model's batch.
Usage: bench_torch.py [--models tiny small gpt2] [--steps 7] [--warmup 2] [--device cpu|cuda] [--tf32] [--batch B]"""
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_args  # noqa: E402

MODELS = {  # the same named configurations as GPTConfig::named, with the benchmark's batch
    "tiny": dict(n_layer=4, n_embd=256, n_head=4, seq=128, vocab=256, batch=8),
    "small": dict(n_layer=6, n_embd=384, n_head=6, seq=256, vocab=256, batch=8),
    # GPT-2 124M's shapes, the vocabulary padded to 50304 (GPTConfig::named("gpt2")); for the GPU
    "gpt2": dict(n_layer=12, n_embd=768, n_head=12, seq=1024, vocab=50304, batch=8),
}


def arguments():
    ap = script_args.Parser("bench_torch.py", description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["tiny", "small"], choices=sorted(MODELS))
    # --steps: the median of that many; its medians need one step at least.
    ap.add_argument("--steps", type=script_args.whole(1, 1000), default=7)
    ap.add_argument("--warmup", type=script_args.whole(0, 1000), default=2)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--tf32", action="store_true", help="cuda: let float32 products use TF32")
    ap.add_argument("--batch", type=script_args.whole(1, 4096), help="sequences per step (default: the model's)")
    return ap.parse_args()


# A bad argument is refused before torch is imported, which takes seconds.
ARGS = arguments() if __name__ == "__main__" else None

import torch  # noqa: E402  (after the arguments: its import takes seconds)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.NH, C // self.NH).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(m["vocab"], m["n_embd"]), nn.Embedding(m["seq"], m["n_embd"])
        self.h = nn.ModuleList(Block(m["n_embd"], m["n_head"]) for _ in range(m["n_layer"]))
        self.ln_f = nn.LayerNorm(m["n_embd"])

    def forward(self, idx, targets):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied LM head
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def bench(m, threads, steps, warmup, device="cpu"):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT(m).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
    idx = torch.randint(0, m["vocab"], (m["batch"], m["seq"]), device=device)
    tgt = torch.randint(0, m["vocab"], (m["batch"], m["seq"]), device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    step_ms, fwd_ms = [], []
    for i in range(warmup + steps):
        sync()
        t0 = time.perf_counter()
        loss = model(idx, tgt)
        sync()
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sync()
        t2 = time.perf_counter()
        if i >= warmup:
            fwd_ms.append(1e3 * (t1 - t0))
            step_ms.append(1e3 * (t2 - t0))
    with torch.no_grad():  # forward-only ("inference") timing, as the C++ bench measures it
        inf = []
        for i in range(warmup + steps):
            sync()
            t0 = time.perf_counter()
            model(idx, tgt)
            sync()
            if i >= warmup:
                inf.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(step_ms), statistics.median(inf)


def bench_gpu(name, m, args):
    """One run on the GPU: float32 products unless --tf32; the peak memory PyTorch's allocator saw."""
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.cuda.reset_peak_memory_stats()
    step, fwd = bench(m, 1, args.steps, args.warmup, "cuda")
    tokens = m["batch"] * m["seq"]
    print(json.dumps({"impl": "pytorch-eager", "device": "cuda", "gpu": torch.cuda.get_device_name(),
                      "model": name, "B": m["batch"], "T": m["seq"], "torch": torch.__version__,
                      "math": "tf32" if args.tf32 else "fp32", "steps": args.steps,
                      "step_ms": round(step, 3), "forward_ms": round(fwd, 3),
                      "tokens_per_s": round(1e3 * tokens / step, 1),
                      "peak_memory_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1)}), flush=True)


def main():
    args = ARGS
    for name in args.models:
        m = dict(MODELS[name])
        if args.batch:
            m["batch"] = args.batch
        if args.device == "cuda":
            bench_gpu(name, m, args)
            continue
        runs = {t: bench(m, t, args.steps, args.warmup) for t in (1, 2)}
        best = min(runs, key=lambda t: runs[t][0])
        tokens = m["batch"] * m["seq"]
        print(json.dumps({"impl": "pytorch-eager", "model": name, "B": m["batch"], "T": m["seq"],
                          "torch": torch.__version__, "best_threads": best,
                          "step_ms": round(runs[best][0], 3), "forward_ms": round(runs[best][1], 3),
                          "tokens_per_s": round(1e3 * tokens / runs[best][0], 1),
                          "step_ms_by_threads": {str(t): round(r[0], 3) for t, r in runs.items()}}), flush=True)


if __name__ == "__main__":
    main()
