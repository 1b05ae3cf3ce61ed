#!/usr/bin/python3
"""Writes the PyTorch reference for training: tests/fixtures/training/<case>.{model,reference}.safetensors.

Development time only (Debian's python3-torch; run with /usr/bin/python3 from the repository root). For each
case it builds a small random model of one PyTorch family (tests/reference/families.py), converts it with
tools/convert_pytorch.py (the command is printed), and on one padded batch, with dropout off:
  - the label-smoothed loss (nn.CrossEntropyLoss(ignore_index=pad, label_smoothing=0.1)) and the gradient of
    every parameter, under the family's names (grad.<name>);
  - the losses of four Adam steps (betas 0.9/0.98, eps 1e-9, lr 1e-3, no clipping) on that batch.
tests/unit/test_training_pytorch.cpp reproduces both with the C++ training pass.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT_DIR = os.path.join(ROOT, "tests", "fixtures", "training")
sys.path.insert(0, HERE)
import families  # noqa: E402
from make_forward_fixtures import write_safetensors  # noqa: E402

PAD, BOS, EOS = 1, 2, 3
SMOOTHING, LR, STEPS = 0.1, 1e-3, 4

CASES = [
    ("pytorch_tutorial_post", "pytorch-tutorial",
     {"d_model": 16, "n_heads": 2, "n_encoder_layers": 2, "n_decoder_layers": 2, "d_ff": 32, "max_positions": 32,
      "encoder_final_norm": True, "decoder_final_norm": True, "src_vocab_size": 23, "tgt_vocab_size": 19}),
    ("pytorch_tutorial_pre_gelu", "pytorch-tutorial",
     {"d_model": 16, "n_heads": 4, "n_encoder_layers": 1, "n_decoder_layers": 2, "d_ff": 24, "max_positions": 32,
      "encoder_final_norm": True, "decoder_final_norm": True, "norm_placement": "pre", "activation": "gelu",
      "src_vocab_size": 23, "tgt_vocab_size": 19}),
    ("seq2seq_tutorial_learned", "seq2seq-tutorial",
     {"d_model": 16, "n_heads": 2, "n_encoder_layers": 2, "n_decoder_layers": 1, "d_ff": 32, "max_positions": 32,
      "positional_encoding": "learned", "src_vocab_size": 23, "tgt_vocab_size": 19}),
]

# Three sentences of different lengths: <bos> x <eos> padded (source); <bos> y / y <eos> padded (target).
SOURCES = [[5, 6, 7, 8, 9, 10], [11, 12, 13], [14, 15, 16, 17]]
TARGETS = [[4, 5, 6, 7], [8, 9, 10, 11, 12, 13], [14]]


def padded(rows, width):
    return [r + [PAD] * (width - len(r)) for r in rows]


def batch():
    src = [[BOS] + s + [EOS] for s in SOURCES]
    tin = [[BOS] + t for t in TARGETS]
    tout = [t + [EOS] for t in TARGETS]
    S, T = max(map(len, src)), max(map(len, tin))
    return (torch.tensor(padded(src, S)), torch.tensor(padded(tin, T)), torch.tensor(padded(tout, T)))


def logits_of(family, model, src, tin):
    if family == "pytorch-tutorial":
        T = tin.shape[1]
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        return model(src, tin, None, causal, src == PAD, tin == PAD, src == PAD)
    out, _ = model(src, tin)
    return out


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    torch.manual_seed(0)
    src, tin, tout = batch()
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=SMOOTHING)
    for name, family, cfg in CASES:
        model = families.build(family, cfg)
        with torch.no_grad():  # non-trivial biases and norms, so their gradients are tested too
            for p in model.parameters():
                p.add_(0.1 * torch.randn_like(p))
        model.train()  # dropout is 0: train mode only matters for nn.Transformer's fast path
        with tempfile.TemporaryDirectory() as tmp:
            torch.save(model.state_dict(), os.path.join(tmp, "model.pt"))
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump(cfg, f)
            for side, n in (("src", cfg["src_vocab_size"]), ("tgt", cfg["tgt_vocab_size"])):
                with open(os.path.join(tmp, side + ".txt"), "w") as f:
                    f.write("\n".join(["<unk>", "<pad>", "<bos>", "<eos>"] + [f"w{i}" for i in range(4, n)]) + "\n")
            cmd = [sys.executable, os.path.join(ROOT, "tools", "convert_pytorch.py"), "--family", family,
                   "--checkpoint", os.path.join(tmp, "model.pt"), "--config", os.path.join(tmp, "config.json"),
                   "--src-vocab", os.path.join(tmp, "src.txt"), "--tgt-vocab", os.path.join(tmp, "tgt.txt"),
                   "--out", os.path.join(OUT_DIR, name + ".model.safetensors")]
            print("$", " ".join(cmd))
            subprocess.run(cmd, check=True)

        logits = logits_of(family, model, src, tin)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tout.reshape(-1))
        model.zero_grad()
        loss.backward()
        tensors = {"ids.src": src.numpy().astype(np.int64), "ids.tgt_in": tin.numpy().astype(np.int64),
                   "ids.tgt_out": tout.numpy().astype(np.int64)}
        for pname, p in model.named_parameters():
            tensors["grad." + pname] = p.grad.detach().numpy().astype(np.float32)

        optimiser = torch.optim.Adam(model.parameters(), lr=LR, betas=(0.9, 0.98), eps=1e-9)
        losses = []
        for _ in range(STEPS):
            optimiser.zero_grad()
            logits = logits_of(family, model, src, tin)
            step_loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tout.reshape(-1))
            losses.append(step_loss.item())
            step_loss.backward()
            optimiser.step()
        meta = {"case": name, "family": family, "loss": str(loss.item()), "adam_losses": json.dumps(losses),
                "label_smoothing": str(SMOOTHING), "learning_rate": str(LR)}
        write_safetensors(os.path.join(OUT_DIR, name + ".reference.safetensors"), tensors, meta)
        print(name, "loss", loss.item(), "adam losses", losses)


if __name__ == "__main__":
    main()
