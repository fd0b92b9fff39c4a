#!/usr/bin/python3
"""The outside reference: the GPT-2 model in plain PyTorch, float64.

Written from the design, sharing no code with the C++ stages, so agreeing with it means two independent
readings of the model agree. It reads and writes the project's checkpoint layout (Hugging Face
GPT-2: config.json + model.safetensors, parsed here with struct/json/numpy) and has two commands:
  eval     the mean cross-entropy of a checkpoint on consecutive windows of a byte file;
  compare  check a dump written by the C++ side (logits, loss, gradients, AdamW loss trajectory).
Run it with Debian's /usr/bin/python3 (python3-torch, python3-numpy). `--help` says more.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F


class InputError(Exception):
    """A bad input (file, checkpoint, dump, size): the message is one sentence for the user."""


# ---- safetensors: 8-byte little-endian header length N, N bytes of JSON, then the raw data ---------

_DTYPES = {  # safetensors name -> numpy dtype (little-endian)
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U8": np.dtype("u1"), "BOOL": np.dtype("?"), "BF16": np.dtype("<u2"),  # BF16 widened below
}
_NAMES = {np.dtype("<f8"): "F64", np.dtype("<f4"): "F32", np.dtype("<i4"): "I32", np.dtype("<i8"): "I64"}


def read_safetensors(path):
    """Returns ({name: numpy array}, {metadata key: str}); BF16 comes back as float32."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    if len(blob) < 8:
        raise InputError(f"{path} is not a safetensors file: it has {len(blob)} bytes, fewer than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise InputError(f"{path} is truncated: its header claims {n} bytes but the file has {len(blob)}")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path} has an unreadable safetensors header ({e})") from None
    metadata = header.pop("__metadata__", None) or {}
    data = memoryview(blob)[8 + n:]
    tensors = {}
    for name, info in header.items():
        dtype = _DTYPES.get(info.get("dtype"))
        if dtype is None:
            raise InputError(f"{path}: tensor {name} has dtype {info.get('dtype')}, which this reader does not know")
        shape = [int(s) for s in info["shape"]]
        begin, end = info["data_offsets"]
        if not 0 <= begin <= end <= len(data) or end - begin != math.prod(shape) * dtype.itemsize:
            raise InputError(f"{path}: tensor {name} has offsets [{begin}, {end}) that do not fit its shape "
                                 f"{shape} or the file (data section of {len(data)} bytes); the file is truncated or corrupt")
        array = np.frombuffer(data[begin:end], dtype=dtype).reshape(shape).copy()
        if info["dtype"] == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = array
    return tensors, {str(k): str(v) for k, v in metadata.items()}


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: array-like} (float64, float32, int32, int64 kept as they are; torch tensors and
    Python numbers converted) with optional string metadata; writes a temporary file, then renames."""
    arrays = {}
    for name, value in tensors.items():
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().numpy()
        a = np.ascontiguousarray(value)
        if a.dtype.newbyteorder("<") not in _NAMES:
            raise ValueError(f"tensor {name}: dtype {a.dtype} is not one of F64, F32, I32, I64")
        arrays[name] = a.astype(a.dtype.newbyteorder("<"), copy=False)
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, a in arrays.items():
        header[name] = {"dtype": _NAMES[a.dtype], "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # pad to 8 bytes so the data is aligned, as safetensors does
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for a in arrays.values():
            f.write(a.tobytes())
    os.replace(tmp, path)


# ---- the checkpoint: config.json + model.safetensors in the Hugging Face GPT-2 layout -------------

def parameter_names(n_layer):
    """The canonical parameter names in the canonical order (src/model/params.h)."""
    names = ["transformer.wte.weight", "transformer.wpe.weight"]
    for l in range(n_layer):
        for part in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"):
            names += [f"transformer.h.{l}.{part}.weight", f"transformer.h.{l}.{part}.bias"]
    return names + ["transformer.ln_f.weight", "transformer.ln_f.bias"]


def parameter_shapes(cfg):
    V, T, C, L = cfg["vocab_size"], cfg["n_positions"], cfg["n_embd"], cfg["n_layer"]
    shapes = {"transformer.wte.weight": (V, C), "transformer.wpe.weight": (T, C),
              "transformer.ln_f.weight": (C,), "transformer.ln_f.bias": (C,)}
    for l in range(L):
        h = f"transformer.h.{l}."
        shapes.update({h + "ln_1.weight": (C,), h + "ln_1.bias": (C,), h + "ln_2.weight": (C,), h + "ln_2.bias": (C,),
                       h + "attn.c_attn.weight": (C, 3 * C), h + "attn.c_attn.bias": (3 * C,),
                       h + "attn.c_proj.weight": (C, C), h + "attn.c_proj.bias": (C,),
                       h + "mlp.c_fc.weight": (C, 4 * C), h + "mlp.c_fc.bias": (4 * C,),
                       h + "mlp.c_proj.weight": (4 * C, C), h + "mlp.c_proj.bias": (C,)})
    return shapes


def _ignored(name):
    # The tied LM head and GPT-2's attention-mask buffers are not parameters of the model.
    return name == "lm_head.weight" or name.endswith(".attn.bias") or name.endswith(".attn.masked_bias")


def read_config(directory):
    path = os.path.join(directory, "config.json")
    try:
        with open(path) as f:
            raw = json.load(f)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}; a checkpoint is a directory with config.json and model.safetensors") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path} is not valid JSON ({e})") from None
    cfg = {}
    for key in ("n_embd", "n_layer", "n_head", "n_positions", "vocab_size"):
        if not isinstance(raw.get(key), int) or raw[key] <= 0:
            raise InputError(f"{path}: key {key} is {raw.get(key)!r}, expected a positive integer")
        cfg[key] = raw[key]
    cfg["layer_norm_epsilon"] = float(raw.get("layer_norm_epsilon", 1e-5))
    activation = raw.get("activation_function", "gelu_new")
    if activation not in ("gelu_new", "gelu_pytorch_tanh"):  # both are the tanh approximation
        raise InputError(f"{path}: activation_function is {activation!r}; this model uses 'gelu_new' (GELU, tanh approximation)")
    if raw.get("model_type", "gpt2") != "gpt2":
        raise InputError(f"{path}: model_type is {raw.get('model_type')!r}, expected 'gpt2'")
    if raw.get("n_inner") not in (None, 4 * cfg["n_embd"]):
        raise InputError(f"{path}: n_inner is {raw['n_inner']}, but this model's MLP is 4 * n_embd = {4 * cfg['n_embd']}")
    if raw.get("tie_word_embeddings", True) is False:
        raise InputError(f"{path}: tie_word_embeddings is false, but this model's LM head is tied to wte")
    if cfg["n_embd"] % cfg["n_head"]:
        raise InputError(f"{path}: n_embd {cfg['n_embd']} is not divisible by n_head {cfg['n_head']}")
    return cfg


def load_checkpoint(directory, dtype=torch.float64):
    """Returns (config dict, {canonical name: tensor of `dtype` with requires_grad}), checked strictly."""
    cfg = read_config(directory)
    tensors, _ = read_safetensors(os.path.join(directory, "model.safetensors"))
    if "transformer.wte.weight" not in tensors and "wte.weight" in tensors:  # saved from GPT2Model
        tensors = {("" if k == "lm_head.weight" else "transformer.") + k: v for k, v in tensors.items()}
    shapes = parameter_shapes(cfg)
    missing = [n for n in shapes if n not in tensors]
    unknown = [n for n in tensors if n not in shapes and not _ignored(n)]
    if missing or unknown:
        listed = lambda names: ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        problems = ([f"missing {listed(missing)}"] if missing else []) + ([f"unexpected {listed(unknown)}"] if unknown else [])
        raise InputError(f"{directory}: model.safetensors does not match config.json ({'; '.join(problems)})")
    params = {}
    for name in parameter_names(cfg["n_layer"]):
        if tuple(tensors[name].shape) != shapes[name]:
            raise InputError(f"{directory}: {name} has shape {list(tensors[name].shape)}, config.json implies {list(shapes[name])}")
        params[name] = torch.tensor(tensors[name].astype(np.float64), dtype=dtype, requires_grad=True)
    return cfg, params


def write_checkpoint(directory, cfg, params):
    """Writes config.json and model.safetensors (float32) for {name: array}, as another GPT-2
    implementation would: the keys transformers needs, no lm_head.weight (tied)."""
    os.makedirs(directory, exist_ok=True)
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "activation_function": "gelu_new",
              "n_embd": cfg["n_embd"], "n_layer": cfg["n_layer"], "n_head": cfg["n_head"],
              "n_positions": cfg["n_positions"], "n_ctx": cfg["n_positions"], "vocab_size": cfg["vocab_size"],
              "layer_norm_epsilon": cfg.get("layer_norm_epsilon", 1e-5),
              "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0, "tie_word_embeddings": True}
    tmp = os.path.join(directory, "config.json.tmp")
    with open(tmp, "w") as f:
        json.dump(config, f, indent=2)
    os.replace(tmp, os.path.join(directory, "config.json"))
    arrays = {}
    for name in parameter_names(cfg["n_layer"]):
        value = params[name]
        value = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
        arrays[name] = value.astype(np.float32)
    write_safetensors(os.path.join(directory, "model.safetensors"), arrays, {"format": "pt"})


# ---- the model, forward only: autograd gives the backward pass ------------------------

def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def causal_self_attention(x, w_attn, b_attn, w_proj, b_proj, n_head):
    B, T, C = x.shape
    HS = C // n_head
    qkv = x @ w_attn + b_attn  # (B, T, 3C): [Q | K | V], heads contiguous within each
    q, k, v = qkv.split(C, dim=2)
    q, k, v = (t.view(B, T, n_head, HS).transpose(1, 2) for t in (q, k, v))  # (B, NH, T, HS)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(HS)  # (B, NH, T, T)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    probs = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(B, T, C)  # heads side by side again
    return y @ w_proj + b_proj


def forward(cfg, params, inputs, targets=None):
    """inputs, targets: integer tensors (B, T). Returns (logits (B*T, V), mean loss or None)."""
    B, T = inputs.shape
    C, eps, p = cfg["n_embd"], cfg["layer_norm_epsilon"], params
    x = p["transformer.wte.weight"][inputs] + p["transformer.wpe.weight"][:T]  # (B, T, C)
    for l in range(cfg["n_layer"]):
        h = f"transformer.h.{l}."
        a = F.layer_norm(x, (C,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], eps)
        x = x + causal_self_attention(a, p[h + "attn.c_attn.weight"], p[h + "attn.c_attn.bias"],
                                      p[h + "attn.c_proj.weight"], p[h + "attn.c_proj.bias"], cfg["n_head"])
        m = F.layer_norm(x, (C,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], eps)
        m = gelu_new(m @ p[h + "mlp.c_fc.weight"] + p[h + "mlp.c_fc.bias"])  # (B, T, F)
        x = x + (m @ p[h + "mlp.c_proj.weight"] + p[h + "mlp.c_proj.bias"])
    x = F.layer_norm(x, (C,), p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], eps)
    logits = x.reshape(B * T, C) @ p["transformer.wte.weight"].t()  # (B*T, V), the tied LM head
    if targets is None:
        return logits, None
    return logits, F.cross_entropy(logits, targets.reshape(B * T).long())


def make_adamw(params, lr, beta1, beta2, eps, weight_decay):
    """torch.optim.AdamW with weight decay on the 2-D parameters only (weights, wte, wpe)."""
    decay = [t for t in params.values() if t.dim() == 2]
    no_decay = [t for t in params.values() if t.dim() != 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(beta1, beta2), eps=eps)


def adamw_losses(cfg, params, inputs, targets, steps, hyper, grad_clip=0.0):
    """The loss before each of `steps` forward passes, with an AdamW update between consecutive ones
    (losses[k] = loss after k updates), all on the same batch. Updates `params` in place."""
    opt = make_adamw(params, **hyper)
    losses = []
    for k in range(steps):
        opt.zero_grad(set_to_none=True)
        _, loss = forward(cfg, params, inputs, targets)
        losses.append(loss.item())
        if k + 1 < steps:
            loss.backward()
            if grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(list(params.values()), grad_clip)
            opt.step()
    return losses


# ---- eval -----------------------------------------------------------------------------------------

def byte_batches(data, B, T, n_batches):
    """Batch k, row b: inputs = bytes [(kB+b)T, (kB+b+1)T), targets = the same window shifted by one."""
    need = n_batches * B * T + 1
    if len(data) < need:
        raise InputError(f"the data file has {len(data)} bytes but --batch {B} --seq {T} --batches {n_batches} "
                             f"need at least {need} (batches x batch x seq + 1); use a longer file or fewer batches")
    tokens = torch.tensor(np.frombuffer(data[:need], dtype=np.uint8).astype(np.int64))
    for k in range(n_batches):
        window = tokens[k * B * T: (k + 1) * B * T + 1]
        yield window[:-1].view(B, T), window[1:].view(B, T)


def command_eval(args):
    if args.batch <= 0 or args.seq <= 0 or args.batches <= 0:
        raise InputError(f"--batch, --seq and --batches must be positive (got {args.batch}, {args.seq}, {args.batches})")
    cfg, params = load_checkpoint(args.checkpoint)
    if args.seq > cfg["n_positions"]:
        raise InputError(f"--seq {args.seq} is longer than the checkpoint's n_positions {cfg['n_positions']}")
    try:
        with open(args.data, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f"cannot read the data file {args.data}: {e.strerror}") from None
    if cfg["vocab_size"] < 256 and data and max(data) >= cfg["vocab_size"]:
        raise InputError(f"the data file holds byte {max(data)}, outside the checkpoint's vocab_size {cfg['vocab_size']}")
    total = 0.0
    with torch.no_grad():
        for inputs, targets in byte_batches(data, args.batch, args.seq, args.batches):
            total += forward(cfg, params, inputs, targets)[1].item()
    print(f"loss {total / args.batches:.10g}")
    return 0


# ---- compare --------------------------------------------------------------------------------------

def relative_error(a, b):
    """‖a − b‖ / ‖b‖ over the whole tensor; the plain ‖a − b‖ where ‖b‖ = 0."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norm = np.linalg.norm(b)
    diff = np.linalg.norm(a - b)
    return float(diff / norm) if norm > 0 else float(diff)


def _require(dump, name, path, shape=None):
    if name not in dump:
        raise InputError(f"the dump {path} has no tensor '{name}'")
    if shape is not None and tuple(dump[name].shape) != tuple(shape):
        raise InputError(f"the dump {path}: '{name}' has shape {list(dump[name].shape)}, expected {list(shape)}")
    return dump[name]


def command_compare(args):
    cfg, params = load_checkpoint(args.checkpoint)
    dump, meta = read_safetensors(args.dump)
    inputs = _require(dump, "inputs", args.dump)
    if inputs.ndim != 2:
        raise InputError(f"the dump {args.dump}: 'inputs' has shape {list(inputs.shape)}, expected [B, T]")
    B, T = inputs.shape
    V = cfg["vocab_size"]
    targets = _require(dump, "targets", args.dump, (B, T))
    if "logits" in dump and tuple(dump["logits"].shape) == (B, T, V):
        dump["logits"] = dump["logits"].reshape(B * T, V)
    dump_logits = _require(dump, "logits", args.dump, (B * T, V))
    dump_loss = float(_require(dump, "loss", args.dump).reshape(-1)[0])
    for name, tokens in (("inputs", inputs), ("targets", targets)):
        if tokens.min() < 0 or tokens.max() >= V:
            raise InputError(f"the dump {args.dump}: '{name}' holds token ids outside [0, {V})")
    if T > cfg["n_positions"]:
        raise InputError(f"the dump's T = {T} is longer than the checkpoint's n_positions {cfg['n_positions']}")
    if float(meta.get("dropout", "0")) != 0.0:
        raise InputError(f"the dump was made with dropout {meta['dropout']}; the reference has no dropout, dump with dropout 0")
    inputs_t = torch.tensor(inputs.astype(np.int64))
    targets_t = torch.tensor(targets.astype(np.int64))

    # Forward and backward at the checkpoint's weights.
    logits, loss = forward(cfg, params, inputs_t, targets_t)
    loss.backward()
    ref_logits = logits.detach().numpy()
    errors = {"logits": relative_error(dump_logits, ref_logits),
              "loss": abs(dump_loss - loss.item()) / abs(loss.item())}
    grad_errors = {}
    for name, p in params.items():
        grad = _require(dump, "grad." + name, args.dump, p.shape)
        grad_errors[name] = relative_error(grad, p.grad.numpy())

    print(f"checkpoint {args.checkpoint}: L={cfg['n_layer']} C={cfg['n_embd']} NH={cfg['n_head']} V={V}; "
          f"dump {args.dump}: B={B} T={T}")
    print(f"{'':22}{'dump':>18}{'reference':>18}")
    for j in range(min(5, V)):
        print(f"{f'logits[0, {j}]':22}{dump_logits[0, j]:>18.9g}{ref_logits[0, j]:>18.9g}")
    last = B * T - 1
    print(f"{f'logits[{last}, {V - 1}]':22}{dump_logits[last, V - 1]:>18.9g}{ref_logits[last, V - 1]:>18.9g}")
    print(f"{'loss':22}{dump_loss:>18.9g}{loss.item():>18.9g}")

    # The AdamW loss trajectory on the same batch, when the dump has one.
    if "losses" in dump:
        dump_losses = dump["losses"].reshape(-1).astype(np.float64)
        try:
            hyper = {k: float(meta[k]) for k in ("lr", "beta1", "beta2", "eps", "weight_decay")}
        except KeyError as e:
            raise InputError(f"the dump {args.dump} has 'losses' but no metadata {e.args[0]} (AdamW needs lr, beta1, beta2, eps, weight_decay)") from None
        except ValueError as e:
            raise InputError(f"the dump {args.dump} has AdamW metadata that is not a number ({e})") from None
        _, fresh = load_checkpoint(args.checkpoint)
        ref_losses = adamw_losses(cfg, fresh, inputs_t, targets_t, len(dump_losses), hyper,
                                  float(meta.get("grad_clip", "0")))
        errors["losses"] = relative_error(dump_losses, ref_losses)
        print("AdamW on the same batch: " + ", ".join(f"{k} {v:g}" for k, v in hyper.items()))
        print(f"{'step':>6}{'dump':>18}{'reference':>18}")
        for k, (a, b) in enumerate(zip(dump_losses, ref_losses)):
            print(f"{k:>6}{a:>18.9g}{b:>18.9g}")
    else:
        print("the dump has no 'losses': the AdamW trajectory is not checked")

    tol = args.tol
    failed = [k for k, e in errors.items() if not e <= tol] + ["grad." + k for k, e in grad_errors.items() if not e <= tol]
    verdict = lambda e: "ok" if e <= tol else "FAIL"
    print(f"relative error ||dump - reference|| / ||reference||, tolerance {tol:g}:")
    print(f"  {'logits':44}{errors['logits']:11.3e}  {verdict(errors['logits'])}")
    print(f"  {'loss':44}{errors['loss']:11.3e}  {verdict(errors['loss'])}")
    worst = sorted(grad_errors.items(), key=lambda kv: -kv[1] if kv[1] == kv[1] else -math.inf)
    print(f"  gradients, the worst {min(5, len(worst))} of {len(worst)}:")
    for name, e in worst[:5]:
        print(f"    {name:42}{e:11.3e}  {verdict(e)}")
    max_grad = max(grad_errors.values(), key=lambda e: math.inf if e != e else e)  # NaN counts as worst
    print(f"  {'gradients, max':44}{max_grad:11.3e}  {verdict(max_grad)}")
    if "losses" in errors:
        print(f"  {f'loss trajectory ({len(dump_losses)} steps)':44}{errors['losses']:11.3e}  {verdict(errors['losses'])}")
    if failed:
        print(f"FAIL: {len(failed)} above tolerance {tol:g}: {', '.join(failed)}")
        return 1
    print("PASS: everything within tolerance")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("eval", help="mean cross-entropy of a checkpoint on a byte file",
                        description="Byte-level tokens (each byte of FILE is a token id). Batch k, row b reads tokens "
                                    "[(kB+b)T, (kB+b+1)T) and predicts the same window shifted by one. "
                                    "Prints 'loss <mean over all N*B*T tokens>' with 10 significant digits.")
    ev.add_argument("--checkpoint", required=True, metavar="DIR", help="directory with config.json and model.safetensors")
    ev.add_argument("--data", required=True, metavar="FILE", help="text file, read as bytes")
    ev.add_argument("--batch", type=int, required=True, metavar="B", help="sequences per batch")
    ev.add_argument("--seq", type=int, required=True, metavar="T", help="tokens per sequence (<= n_positions)")
    ev.add_argument("--batches", type=int, default=1, metavar="N", help="consecutive batches to average (default 1)")
    cmp = sub.add_parser("compare", help="check a C++ dump (logits, loss, gradients, AdamW losses) in float64",
                         description="The dump is a safetensors file: inputs, targets [B, T] I32; logits [B*T, V] F32; "
                                     "loss [1] F32; grad.<name> F32 for every canonical parameter; optionally losses [S] "
                                     "F32 (losses[k] = loss after k AdamW updates on the same batch) with string "
                                     "metadata lr, beta1, beta2, eps, weight_decay (and optional grad_clip, dropout = 0). "
                                     "Exit 0 if every relative error is within --tol, 1 if not, 2 on bad input.")
    cmp.add_argument("--checkpoint", required=True, metavar="DIR", help="the checkpoint the dump was made from")
    cmp.add_argument("--dump", required=True, metavar="FILE", help="safetensors file written by the C++ side")
    cmp.add_argument("--tol", type=float, default=1e-5, help="largest allowed relative error (default 1e-5)")
    args = parser.parse_args(argv)
    try:
        return command_eval(args) if args.command == "eval" else command_compare(args)
    except InputError as e:
        print(f"gpt_reference: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
