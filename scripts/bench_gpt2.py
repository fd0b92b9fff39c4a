"""GPT-2 124M's shapes end to end, optimus beside transformers (PyTorch eager, float32) in the same run:
load a transformers-saved checkpoint and evaluate 16 tokens, initialise a model and write it, sample
the first token, one training step from the checkpoint at B=1 and B=8 (T=64), and saving a
checkpoint with its AdamW state. Run by scripts/bench_gpt2.sh, which says how to read the numbers.

Each operation is its own process, so its peak resident memory (RSS) is its own. optimus: the
command's wall time and peak RSS (/usr/bin/time), and for train the phases read from the moments
its output lines arrive (load: from "training ... parameters", printed before the model is built,
to "starting from the weights"; save: from the last validation line to "checkpoint saved"), the
step's own ms and the memory ledger's peak from metrics.jsonl. transformers: the time inside the
process after Python has imported torch and transformers (the import time is given apart), and the
process's peak RSS.
Usage: bench_gpt2.py OPTIMUS OUT_JSONL OUT_TXT [--threads 2]"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_args  # noqa: E402

MIB = 1 << 20
BATCHES = (1, 8)
T = 64


# ---- transformers, one operation per process -------------------------------------------------------

def torch_op(op, checkpoint, work, threads):
    """Runs in a fresh interpreter: one operation, its phases timed in-process; prints a JSON line."""
    start = time.perf_counter()
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.set_num_threads(threads)
    row = {"import_s": time.perf_counter() - start}
    torch.manual_seed(0)
    t0 = time.perf_counter()
    if op == "init":
        model = GPT2LMHeadModel(GPT2Config())
        row["init_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        model.save_pretrained(os.path.join(work, "torch-init"))
        row["save_s"] = time.perf_counter() - t1
    else:
        model = GPT2LMHeadModel.from_pretrained(checkpoint)
        row["load_s"] = time.perf_counter() - t0
    if op == "eval":
        model.eval()
        ids = torch.randint(0, 256, (1, 17))
        t1 = time.perf_counter()
        with torch.no_grad():
            model(ids[:, :-1], labels=ids[:, 1:])
        row["forward_s"] = time.perf_counter() - t1
    if op == "sample":  # optimus sample runs its forward pass on a window of n_positions tokens
        model.eval()
        t1 = time.perf_counter()
        with torch.no_grad():
            model.generate(torch.tensor([[10]]), max_new_tokens=1, do_sample=True, top_k=0,
                           pad_token_id=0)
        row["first_token_s"] = time.perf_counter() - t1
    if op.startswith("train"):
        B = int(op.split("B")[1])
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
        ids = torch.randint(0, 256, (B, T + 1))
        t1 = time.perf_counter()
        out = model(ids[:, :-1], labels=ids[:, 1:])
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        row["step_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        model.save_pretrained(os.path.join(work, f"torch-{op}"))
        torch.save(opt.state_dict(), os.path.join(work, f"torch-{op}", "optimizer.pt"))
        row["save_s"] = time.perf_counter() - t2
    row["total_s"] = time.perf_counter() - t0
    row["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(row))


def run_torch(op, checkpoint, work, threads):
    out = subprocess.run([sys.executable, __file__, "--torch-op", op, "--checkpoint", checkpoint, "--work", work,
                          "--threads", str(threads)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- optimus, one command per operation ------------------------------------------------------------

def run_optimus(cmd, env):
    """Runs cmd under /usr/bin/time: its wall time, peak RSS, and each output line with the second it arrived."""
    start = time.perf_counter()
    proc = subprocess.Popen(["/usr/bin/time", "-f", "TIME %e %M"] + cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace", env=env, bufsize=1)
    lines = [(time.perf_counter() - start, line.rstrip("\n")) for line in proc.stdout]
    if proc.wait() != 0:
        raise SystemExit("failed: " + " ".join(cmd) + "\n" + "\n".join(l for _, l in lines))
    wall, rss_kb = next(l for _, l in lines if l.startswith("TIME ")).split()[1:]
    return {"wall_s": float(wall), "peak_rss_mib": int(rss_kb) / 1024}, lines


def arrived(lines, text, after=0.0):
    return next(t for t, l in lines if text in l and t >= after)


def train_phases(lines, out):
    """The load and save times of a train run from its output lines, its step's ms and ledger peak."""
    loaded = arrived(lines, "starting from the weights")
    saved = arrived(lines, "checkpoint saved")
    last_validation = max(t for t, l in lines if "validation loss" in l and t <= saved)
    metrics = [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl"))]
    step = next(m for m in metrics if "train_loss" in m)
    return {"load_s": loaded - arrived(lines, "training "), "step_s": step["ms"] / 1e3,
            "save_s": saved - last_validation, "ledger_peak_mib": step["peak_mib"],
            "ledger_activations_mib": step["peak_activations_mib"]}


def optimus_rows(optimus, checkpoint, work, text, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    rows = []
    run, _ = run_optimus([optimus, "eval", "--checkpoint", checkpoint, "--data", text, "--batch", "1", "--seq", "16",
                          "--batches", "1"], env)
    rows.append(dict(op="load + eval 16 tokens", **run))
    init = os.path.join(work, "optimus-init")
    run, _ = run_optimus([optimus, "init", "--layers", "12", "--embd", "768", "--heads", "12", "--seq", "1024",
                          "--vocab", "50257", "--out", init], env)
    rows.append(dict(op="init + write (124M shapes)", **run))
    run, _ = run_optimus([optimus, "sample", "--checkpoint", checkpoint, "--tokens", "1"], env)
    rows.append(dict(op="load + sample first token", **run))
    for B in BATCHES:
        out = os.path.join(work, f"optimus-train-B{B}")
        run, lines = run_optimus([optimus, "train", "--init-from", checkpoint, "--data", text, "--batch", str(B),
                                  "--seq", str(T), "--steps", "1", "--eval-batches", "1", "--progress", "lines",
                                  "--out", out], env)
        rows.append(dict(op=f"train from checkpoint, 1 step B={B} T={T}", **run, **train_phases(lines, out)))
    return rows


def torch_rows(checkpoint, work, threads):
    ops = [("eval", "load + eval 16 tokens"), ("init", "init + write (124M shapes)"),
           ("sample", "load + sample first token")] + [
        (f"trainB{B}", f"train from checkpoint, 1 step B={B} T={T}") for B in BATCHES]
    return [dict(op=name, **run_torch(op, checkpoint, work, threads)) for op, name in ops]


def table(rows, meta):
    out = [f"# scripts/bench_gpt2.sh: {meta['date']} on {meta['cores']} cores ({meta['cpu']}), {meta['threads']} threads, "
           f"transformers {meta['transformers']}, torch {meta['torch']}, commit {meta['commit']}",
           "# optimus: the command's wall time (process start to exit); transformers: in-process time after its "
           "import (import time apart). Peak RSS of each process.", "",
           f"{'operation':42} {'impl':13} {'total s':>8} {'load s':>7} {'step s':>7} {'save s':>7} "
           f"{'peak RSS MiB':>13} {'ledger MiB':>11}"]
    for r in rows:
        def f(key, width, fmt):
            return format(r[key], fmt).rjust(width) if key in r else "".rjust(width)
        total = r.get("wall_s", r.get("total_s"))
        out.append(f"{r['op']:42} {r['impl']:13} {total:>8.2f} {f('load_s', 7, '.2f')} {f('step_s', 7, '.2f')} "
                   f"{f('save_s', 7, '.2f')} {r['peak_rss_mib']:>13.0f} {f('ledger_peak_mib', 11, '.0f')}")
    imports = [r["import_s"] for r in rows if "import_s" in r]
    out.append(f"\ntransformers' import of torch and transformers, not counted above: {min(imports):.1f}-"
               f"{max(imports):.1f} s per process")
    return "\n".join(out) + "\n"


def main():
    p = script_args.Parser("bench_gpt2", description=__doc__)
    p.add_argument("optimus", nargs="?")
    p.add_argument("out_jsonl", nargs="?")
    p.add_argument("out_txt", nargs="?")
    p.add_argument("--threads", type=script_args.whole(1, 256), default=2)
    p.add_argument("--torch-op")
    p.add_argument("--checkpoint")
    p.add_argument("--work")
    a = p.parse_args()
    if a.torch_op:
        return torch_op(a.torch_op, a.checkpoint, a.work, a.threads)
    if a.out_txt is None:
        p.error("give OPTIMUS OUT_JSONL OUT_TXT")
    script_args.program("bench_gpt2", a.optimus, "run scripts/build")
    script_args.output_file("bench_gpt2", "OUT_JSONL", a.out_jsonl)
    script_args.output_file("bench_gpt2", "OUT_TXT", a.out_txt)
    import torch
    import transformers
    with tempfile.TemporaryDirectory(prefix="bench_gpt2_") as work:
        checkpoint = os.path.join(work, "gpt2-124m")
        torch.manual_seed(0)
        transformers.GPT2LMHeadModel(transformers.GPT2Config()).save_pretrained(checkpoint)
        text = os.path.join(work, "text.txt")
        with open(text, "w") as f:  # byte tokens for optimus: enough for a B=8 step and its validation windows
            f.write(("The grid sums a row, then a column, then the ranks agree. " * 400))
        rows = [dict(impl="optimus", **r) for r in optimus_rows(a.optimus, checkpoint, work, text, a.threads)]
        rows += [dict(impl="transformers", **r) for r in torch_rows(checkpoint, work, a.threads)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    meta = {"date": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()), "cores": os.cpu_count(), "threads": a.threads,
            "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), ""),
            "transformers": transformers.__version__, "torch": torch.__version__,
            "commit": subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True,
                                     text=True).stdout.strip()}
    with open(a.out_jsonl, "w") as f:
        for r in rows:
            f.write(json.dumps(dict(r, **meta)) + "\n")
    report = table(rows, meta)
    with open(a.out_txt, "w") as f:
        f.write(report)
    print(report, end="")


if __name__ == "__main__":
    main()
