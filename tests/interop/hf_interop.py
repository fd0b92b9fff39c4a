"""The Hugging Face side of the interoperability test (label interop).

Run with the project's virtual environment, .venv/bin/python (transformers from PyPI, pinned in
scripts/requirements-interop.txt, over Debian's torch). Two commands:
  eval   GPT2LMHeadModel.from_pretrained(DIR), strictly (no missing, unexpected or resized tensor, the
         LM head tied, every tensor equal to the file's), then the mean loss on the windows of
         `optimus eval`: batch k, row b reads bytes [(kB+b)T, (kB+b+1)T) and predicts the same window
         shifted by one (src/train/data.cpp, eval_batch). Prints "loss <value>" as optimus eval does.
  save   GPT2LMHeadModel(GPT2Config(...)) with random weights, written with save_pretrained(DIR)
         (safetensors), as a transformers user would.
"""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from safetensors.numpy import load_file
from transformers import GPT2Config, GPT2LMHeadModel


def fail(message):
    print(f"hf_interop: {message}", file=sys.stderr)
    sys.exit(1)


def load_strictly(directory):
    """The model as transformers loads it, after checking that it loaded every tensor of the file
    and nothing else: from_pretrained only warns about missing or unexpected tensors."""
    model, info = GPT2LMHeadModel.from_pretrained(directory, output_loading_info=True)
    problems = {k: v for k, v in info.items() if v}
    if problems:
        fail(f"transformers loaded {directory} with problems: {problems}")
    if model.lm_head.weight.data_ptr() != model.transformer.wte.weight.data_ptr():
        fail(f"transformers did not tie lm_head.weight to transformer.wte.weight for {directory}")
    state = model.state_dict()
    for name, array in load_file(os.path.join(directory, "model.safetensors")).items():
        if name not in state:
            fail(f"{directory}: the file's tensor {name} is not in the loaded model")
        if not np.array_equal(state[name].numpy(), array):
            fail(f"{directory}: the loaded {name} differs from the file's")
    return model.eval()


def command_eval(args):
    model = load_strictly(args.checkpoint)
    if args.seq > model.config.n_positions:
        fail(f"--seq {args.seq} is longer than the model's n_positions {model.config.n_positions}")
    B, T, K = args.batch, args.seq, args.batches
    with open(args.data, "rb") as f:
        tokens = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int64)
    if len(tokens) < K * B * T + 1:
        fail(f"{args.data} has {len(tokens)} bytes; {K} batches of {B}x{T} need {K * B * T + 1}")
    # float64, as the chapter 1 reference computes, so a difference from optimus eval is optimus's
    # float32 round-off alone; --float32 runs the model as loaded.
    if not args.float32:
        model = model.double()
    total = 0.0
    with torch.no_grad():
        for k in range(K):
            starts = [(k * B + b) * T for b in range(B)]
            inputs = torch.tensor(np.stack([tokens[s:s + T] for s in starts]))  # (B, T)
            targets = torch.tensor(np.stack([tokens[s + 1:s + T + 1] for s in starts]))  # (B, T)
            logits = model(input_ids=inputs).logits  # (B, T, V)
            total += F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T)).item()
    print(f"loss {total / K:.10g}")


def command_save(args):
    torch.manual_seed(args.seed)
    config = GPT2Config(n_layer=args.layers, n_embd=args.embd, n_head=args.heads, n_positions=args.positions,
                        vocab_size=args.vocab)
    model = GPT2LMHeadModel(config)
    # GPT-2's initialisation leaves biases at 0 and LayerNorm at (1, 0); noise on every parameter
    # makes each tensor matter, so a bias or LayerNorm read in the wrong place changes the loss.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    model.save_pretrained(args.out, safe_serialization=True)
    if not os.path.exists(os.path.join(args.out, "model.safetensors")):
        fail(f"save_pretrained did not write {args.out}/model.safetensors")
    n = sum(p.numel() for p in model.parameters())
    print(f"saved {args.out}: transformers {transformers.__version__}, torch {torch.__version__}, "
          f"L={args.layers} C={args.embd} NH={args.heads} T={args.positions} V={args.vocab}, {n} parameters")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("eval", help="from_pretrained, then the mean loss on optimus eval's windows")
    ev.add_argument("--checkpoint", required=True, metavar="DIR")
    ev.add_argument("--data", required=True, metavar="FILE")
    ev.add_argument("--batch", type=int, required=True, metavar="B")
    ev.add_argument("--seq", type=int, required=True, metavar="T")
    ev.add_argument("--batches", type=int, default=1, metavar="K")
    ev.add_argument("--float32", action="store_true", help="evaluate in float32 (default float64)")
    sv = sub.add_parser("save", help="a random GPT2LMHeadModel, saved with save_pretrained")
    sv.add_argument("--out", required=True, metavar="DIR")
    sv.add_argument("--layers", type=int, default=2)
    sv.add_argument("--embd", type=int, default=64)
    sv.add_argument("--heads", type=int, default=4)
    sv.add_argument("--positions", type=int, default=32)
    sv.add_argument("--vocab", type=int, default=256)
    sv.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    transformers.logging.set_verbosity_error()  # the checks above replace its warnings
    command_eval(args) if args.command == "eval" else command_save(args)


if __name__ == "__main__":
    main()
