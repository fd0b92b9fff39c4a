#!/usr/bin/python3
"""Self-check of the outside reference (tests/reference/gpt_reference.py) before it judges the C++ side.

A random tiny GPT-2 checkpoint is written with the reference's own writer; a float32 run of the same
model (float32 autograd, float32 AdamW) plays the part of the C++ side and writes a dump; `compare`
must accept it at 1e-5 and reject it once one gradient element is perturbed. The model itself is
checked against an independent numpy forward pass and against finite differences, and `eval` against
the numpy loss on hand-cut windows. Run: /usr/bin/python3 tests/reference/test_reference_selfcheck.py
"""

import contextlib
import io
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpt_reference as ref  # noqa: E402

CFG = {"n_layer": 2, "n_embd": 16, "n_head": 4, "n_positions": 16, "vocab_size": 256, "layer_norm_epsilon": 1e-5}
HYPER = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1}


def random_parameters(seed=1234):
    """Every tensor random (LN weights around 1, biases nonzero), so every gradient is exercised."""
    rng = np.random.default_rng(seed)
    shapes = ref.parameter_shapes(CFG)
    params = {}
    for name in ref.parameter_names(CFG["n_layer"]):
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
            params[name] = 1.0 + 0.1 * rng.standard_normal(shapes[name])
        else:
            params[name] = 0.2 * rng.standard_normal(shapes[name])
    return {k: v.astype(np.float32) for k, v in params.items()}


def numpy_loss(params, inputs, targets):
    """The model once more, in numpy float64, written apart from the torch version."""
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    B, T = inputs.shape
    C, NH = CFG["n_embd"], CFG["n_head"]
    HS = C // NH

    def layernorm(x, w, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + CFG["layer_norm_epsilon"]) * w + b

    x = p["transformer.wte.weight"][inputs] + p["transformer.wpe.weight"][:T]
    for l in range(CFG["n_layer"]):
        h = f"transformer.h.{l}."
        a = layernorm(x, p[h + "ln_1.weight"], p[h + "ln_1.bias"])
        qkv = a @ p[h + "attn.c_attn.weight"] + p[h + "attn.c_attn.bias"]
        y = np.zeros((B, T, C))
        for head in range(NH):
            cols = slice(head * HS, (head + 1) * HS)
            q, k, v = qkv[:, :, cols], qkv[:, :, C:][:, :, cols], qkv[:, :, 2 * C:][:, :, cols]
            for b in range(B):
                for t in range(T):
                    s = k[b, : t + 1] @ q[b, t] / math.sqrt(HS)
                    w = np.exp(s - s.max())
                    y[b, t, cols] = (w / w.sum()) @ v[b, : t + 1]
        x = x + y @ p[h + "attn.c_proj.weight"] + p[h + "attn.c_proj.bias"]
        m = layernorm(x, p[h + "ln_2.weight"], p[h + "ln_2.bias"]) @ p[h + "mlp.c_fc.weight"] + p[h + "mlp.c_fc.bias"]
        m = 0.5 * m * (1 + np.tanh(math.sqrt(2 / math.pi) * (m + 0.044715 * m ** 3)))
        x = x + m @ p[h + "mlp.c_proj.weight"] + p[h + "mlp.c_proj.bias"]
    x = layernorm(x, p["transformer.ln_f.weight"], p["transformer.ln_f.bias"])
    logits = x.reshape(B * T, C) @ p["transformer.wte.weight"].T
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return -logp[np.arange(B * T), targets.reshape(-1)].mean()


def run_main(argv):
    """gpt_reference.main in this process (importing torch again costs seconds): (rc, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = ref.main(argv)
        except SystemExit as e:  # argparse
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def make_dump(ckpt, path, B=2, T=8, steps=6, seed=7):
    """What the C++ side does, in float32: forward, backward, AdamW steps on one batch, then the dump."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, CFG["vocab_size"], size=(B, T + 1)).astype(np.int32)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    cfg, params = ref.load_checkpoint(ckpt, dtype=torch.float32)
    x, y = torch.tensor(inputs).long(), torch.tensor(targets).long()
    logits, loss = ref.forward(cfg, params, x, y)
    loss.backward()
    dump = {"inputs": inputs, "targets": targets, "logits": logits.detach().numpy(),
            "loss": np.array([loss.item()], dtype=np.float32)}
    dump.update({"grad." + k: p.grad.numpy().copy() for k, p in params.items()})
    for p in params.values():
        p.grad = None
    losses = ref.adamw_losses(cfg, params, x, y, steps, HYPER)
    dump["losses"] = np.array(losses, dtype=np.float32)
    ref.write_safetensors(path, dump, {k: repr(v) for k, v in HYPER.items()})
    return dump, inputs, targets


def test_safetensors_round_trip(tmp):
    path = os.path.join(tmp, "t.safetensors")
    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    b = np.array([[1, -2, 3]], dtype=np.int32)
    ref.write_safetensors(path, {"a": a, "b": b}, {"lr": "0.001"})
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
    assert n % 8 == 0, "the header is padded to 8 bytes"
    tensors, meta = ref.read_safetensors(path)
    assert meta == {"lr": "0.001"}
    assert tensors["a"].dtype == np.float32 and np.array_equal(tensors["a"], a)
    assert tensors["b"].dtype == np.int32 and np.array_equal(tensors["b"], b)


def test_model_matches_numpy_and_finite_differences(ckpt, params32):
    cfg, params = ref.load_checkpoint(ckpt)
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 256, size=(2, 9))
    x, y = torch.tensor(tokens[:, :-1]), torch.tensor(tokens[:, 1:])
    _, loss = ref.forward(cfg, params, x, y)
    expected = numpy_loss(params32, tokens[:, :-1], tokens[:, 1:])
    assert abs(loss.item() - expected) <= 1e-12 * abs(expected), (loss.item(), expected)
    loss.backward()
    h = 1e-6
    for name, index in (("transformer.h.0.attn.c_attn.weight", (3, 40)), ("transformer.wte.weight", (tokens[0, 2], 5)),
                        ("transformer.h.1.ln_2.bias", (7,)), ("transformer.wpe.weight", (4, 1))):
        with torch.no_grad():
            p = params[name]
            p[index] += h
            up = ref.forward(cfg, params, x, y)[1].item()
            p[index] -= 2 * h
            down = ref.forward(cfg, params, x, y)[1].item()
            p[index] += h
        fd = (up - down) / (2 * h)
        g = p.grad[index].item()
        assert abs(fd - g) <= 1e-6 * max(abs(g), 1e-3), (name, fd, g)


def test_compare_accepts_a_float32_run(ckpt, dump_path):
    # Through the real command line once: the script runs as it will in the test suite.
    proc = subprocess.run([sys.executable, os.path.join(HERE, "gpt_reference.py"), "compare",
                           "--checkpoint", ckpt, "--dump", dump_path], capture_output=True, text=True)
    print(proc.stdout, end="")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout


def test_compare_rejects_a_perturbed_gradient(ckpt, dump, tmp):
    bad = dict(dump)
    name = "grad.transformer.h.1.mlp.c_fc.weight"
    bad[name] = dump[name].copy()
    bad[name][2, 5] += 1e-3 * np.linalg.norm(dump[name])
    path = os.path.join(tmp, "bad.safetensors")
    ref.write_safetensors(path, bad, {k: repr(v) for k, v in HYPER.items()})
    rc, out, _ = run_main(["compare", "--checkpoint", ckpt, "--dump", path])
    assert rc == 1, out
    fail_line = out.strip().splitlines()[-1]
    assert fail_line.startswith("FAIL") and name in fail_line and "logits" not in fail_line, fail_line
    print("perturbed gradient:", fail_line)


def test_compare_rejects_a_wrong_trajectory(ckpt, dump, tmp):
    bad = dict(dump)
    bad["losses"] = dump["losses"].copy()
    bad["losses"][-1] *= 1.001
    path = os.path.join(tmp, "bad_losses.safetensors")
    ref.write_safetensors(path, bad, {k: repr(v) for k, v in HYPER.items()})
    rc, out, _ = run_main(["compare", "--checkpoint", ckpt, "--dump", path])
    assert rc == 1 and out.strip().splitlines()[-1] == "FAIL: 1 above tolerance 1e-05: losses", out


def test_eval_matches_hand_cut_windows(ckpt, params32, tmp):
    rng = np.random.default_rng(11)
    B, T, N = 2, 8, 3
    data = rng.integers(0, 256, size=N * B * T + 5, dtype=np.uint8).tobytes()
    path = os.path.join(tmp, "data.bin")
    with open(path, "wb") as f:
        f.write(data)
    rc, out, err = run_main(["eval", "--checkpoint", ckpt, "--data", path, "--batch", str(B), "--seq", str(T),
                             "--batches", str(N)])
    assert rc == 0, err
    words = out.split()
    assert len(words) == 2 and words[0] == "loss", out
    tokens = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    expected = 0.0
    for k in range(N):
        rows = [(k * B + b) * T for b in range(B)]
        inputs = np.stack([tokens[r: r + T] for r in rows])
        targets = np.stack([tokens[r + 1: r + T + 1] for r in rows])
        expected += numpy_loss(params32, inputs, targets) / N
    assert abs(float(words[1]) - expected) <= 1e-9 * expected, (words[1], expected)
    print(f"eval: {out.strip()} (numpy on hand-cut windows: {expected:.10g})")


def test_eval_rejects_a_short_file(ckpt, tmp):
    path = os.path.join(tmp, "short.txt")
    with open(path, "wb") as f:
        f.write(b"too short")
    rc, out, err = run_main(["eval", "--checkpoint", ckpt, "--data", path, "--batch", "2", "--seq", "8"])
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and "17" in err, (rc, out, err)
    rc, _, err = run_main(["eval", "--checkpoint", os.path.join(tmp, "nowhere"), "--data", path, "--batch", "1", "--seq", "1"])
    assert rc == 2 and "config.json" in err, err
    rc, out, _ = run_main(["--help"])
    assert rc == 0 and "compare" in out


def main():
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "ckpt")
        params32 = random_parameters()
        ref.write_checkpoint(ckpt, CFG, params32)
        dump_path = os.path.join(tmp, "dump.safetensors")
        dump, _, _ = make_dump(ckpt, dump_path)
        tests = [("safetensors round trip", lambda: test_safetensors_round_trip(tmp)),
                 ("model = numpy forward, gradients = finite differences",
                  lambda: test_model_matches_numpy_and_finite_differences(ckpt, params32)),
                 ("compare accepts a float32 run at 1e-5", lambda: test_compare_accepts_a_float32_run(ckpt, dump_path)),
                 ("compare rejects a perturbed gradient", lambda: test_compare_rejects_a_perturbed_gradient(ckpt, dump, tmp)),
                 ("compare rejects a wrong loss trajectory", lambda: test_compare_rejects_a_wrong_trajectory(ckpt, dump, tmp)),
                 ("eval equals numpy on hand-cut windows", lambda: test_eval_matches_hand_cut_windows(ckpt, params32, tmp)),
                 ("eval rejects bad input", lambda: test_eval_rejects_a_short_file(ckpt, tmp))]
        failures = 0
        for title, test in tests:
            try:
                test()
                print(f"ok    {title}")
            except AssertionError as e:
                failures += 1
                print(f"FAIL  {title}: {e}")
    print(f"{len(tests) - failures} of {len(tests)} passed in {time.time() - start:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
