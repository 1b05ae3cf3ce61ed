#!/usr/bin/python3
"""The PyTorch side of bench/bench_attribution.cpp: integrated gradients on the shipped translator's weights, the
same ids and thread count, with autograd in torch eager.

    build/bench/bench_attribution
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/bench_pytorch_attribution.py assets/models/de-en.safetensors \
        --cli build/app/stepformer-cli

The model file (family stepformer: post-norm, ReLU, sinusoidal positions, no final norms, the generator tied to
the target embedding) is read into torch's own layers: nn.TransformerEncoderLayer and nn.TransformerDecoderLayer
(batch_first, dropout 0), Q, K, V joined into in_proj. Integrated gradients as a PyTorch user writes them (and as
Captum batches them): the token embeddings x = E[id] sqrt(d_model) of both sides, the N scaled copies k/N x
(k = 1..N) and the baseline (k = 0) as one batch of N + 1 through the model, the output layer applied to the scored
row alone and no weight requiring a gradient (what ours computes too), f = log_softmax(logits[:, row])[token]
summed over the copies and backpropagated once, a_i = x_i . mean_k(df/dx_i(k/N x)). Times the last row's (ig/N,
the one prediction of BM_IntegratedGradients/N) and every row's (ig_sentence/32: 20 such batches) with
torch.set_num_threads(1) (override: --threads N). With --cli it first checks that both sides compute the same
attributions: `stepformer-cli attribute --method ig` on the same ids against torch's, every row.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_bench_env  # noqa: E402

BLAS = torch_bench_env.prepare(sys.argv)  # threads and BLAS, before torch is imported
import torch  # noqa: E402

import torch.nn as nn  # noqa: E402

from bench_pytorch import PositionalEncoding, median_ms, read_safetensors  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402

TOKEN = 17  # the token scored at the last row, as bench_attribution.cpp


def source_ids():
    return [4 + (7 * i) % 7000 for i in range(19)] + [3]


def target_ids():
    return [2] + [4 + (11 * i) % 5000 for i in range(1, 20)]


class Translator(nn.Module):
    """The stepformer family's translator in torch's layers: post-norm, no final norms, the generator tied."""

    def __init__(self, c, w):
        super().__init__()
        C, H, F_ = c["d_model"], c["n_heads"], c["d_ff"]
        assert c["norm_placement"] == "post" and c["activation"] == "relu" and c["tie_output_embedding"]
        assert not c.get("encoder_final_norm") and not c.get("decoder_final_norm")
        self.C = C
        self.encoder = nn.ModuleList([nn.TransformerEncoderLayer(C, H, F_, 0.0, batch_first=True)
                                      for _ in range(c["n_encoder_layers"])])
        self.decoder = nn.ModuleList([nn.TransformerDecoderLayer(C, H, F_, 0.0, batch_first=True)
                                      for _ in range(c["n_decoder_layers"])])
        self.positional_encoding = PositionalEncoding(C, c["max_positions"])
        self.src_embedding = nn.Parameter(w["src_embedding.weight"])
        self.tgt_embedding = nn.Parameter(w["tgt_embedding.weight"])
        self.generator_bias = nn.Parameter(w["generator.bias"])

        def attention(module, prefix):
            module.in_proj_weight.data = torch.cat([w[prefix + n + ".weight"] for n in "qkv"])
            module.in_proj_bias.data = torch.cat([w[prefix + n + ".bias"] for n in "qkv"])
            module.out_proj.weight.data, module.out_proj.bias.data = w[prefix + "out.weight"], w[prefix + "out.bias"]

        def norm(module, prefix):
            module.weight.data, module.bias.data = w[prefix + ".weight"], w[prefix + ".bias"]

        def ffn(layer, prefix):
            layer.linear1.weight.data, layer.linear1.bias.data = w[prefix + "fc1.weight"], w[prefix + "fc1.bias"]
            layer.linear2.weight.data, layer.linear2.bias.data = w[prefix + "fc2.weight"], w[prefix + "fc2.bias"]

        for i, layer in enumerate(self.encoder):
            p = f"encoder.layers.{i}."
            attention(layer.self_attn, p + "self_attn.")
            norm(layer.norm1, p + "self_attn_norm")
            norm(layer.norm2, p + "ffn_norm")
            ffn(layer, p + "ffn.")
        for i, layer in enumerate(self.decoder):
            p = f"decoder.layers.{i}."
            attention(layer.self_attn, p + "self_attn.")
            attention(layer.multihead_attn, p + "cross_attn.")
            norm(layer.norm1, p + "self_attn_norm")
            norm(layer.norm2, p + "cross_attn_norm")
            norm(layer.norm3, p + "ffn_norm")
            ffn(layer, p + "ffn.")

    def embed(self, ids, table):  # x = E[id] sqrt(d_model): the input attribution scores
        return table[ids] * math.sqrt(self.C)

    def logits(self, src_x, tgt_x, row):
        """Token embeddings (B, S, C), (B, T, C) -> the logits of decoder row `row` (B, V)."""
        memory = self.positional_encoding(src_x)
        for layer in self.encoder:
            memory = layer(memory)
        T = tgt_x.size(1)
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        x = self.positional_encoding(tgt_x)
        for layer in self.decoder:
            x = layer(x, memory, tgt_mask=mask)
        return x[:, row] @ self.tgt_embedding.t() + self.generator_bias


def integrated_gradients(model, src, tgt, row, token, steps):
    """(source (S), target (T)) attributions, f, f(0): one batch of steps + 1 copies, one backward."""
    xs = model.embed(src, model.src_embedding)  # (1, S, C)
    xt = model.embed(tgt, model.tgt_embedding)  # (1, T, C)
    alpha = torch.arange(steps + 1, dtype=torch.float32).view(-1, 1, 1) / steps  # (B, 1, 1)
    s = (alpha * xs.detach()).requires_grad_(True)  # (B, S, C)
    t = (alpha * xt.detach()).requires_grad_(True)  # (B, T, C)
    logits = model.logits(s, t, row)  # (B, V)
    f = torch.log_softmax(logits, -1)[:, token]  # (B)
    f[1:].sum().backward()
    a_src = (xs[0].detach() * s.grad[1:].mean(0)).sum(-1)
    a_tgt = (xt[0].detach() * t.grad[1:].mean(0)).sum(-1)
    return a_src, a_tgt, f[-1].item(), f[0].item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cli", help="stepformer-cli, to check that its attributions equal torch's")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tensors, meta = read_safetensors(args.model)
    model = Translator(json.loads(meta["config"]), tensors)
    model.eval()
    for p in model.parameters():  # the inputs' gradients alone, as ours (no weight's gradient is computed)
        p.requires_grad_(False)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, BLAS {BLAS}")
    src, tgt = torch.tensor([source_ids()]), torch.tensor([target_ids()])
    rows = tgt.size(1)
    tokens = target_ids()[1:] + [TOKEN]
    if args.cli:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "a.safetensors")
            subprocess.run([args.cli, "attribute", args.model, "--ids", "--src", " ".join(map(str, source_ids())),
                            "--tgt", " ".join(map(str, target_ids() + [TOKEN])), "--method", "ig", "--steps", "32",
                            "--out", out], check=True, stdout=subprocess.DEVNULL)
            ours = read_safetensors(out)[0]["attribution"]  # (T, S + T)
        worst, scale = 0.0, 0.0
        for r in range(rows):
            a_src, a_tgt, _, _ = integrated_gradients(model, src, tgt, r, tokens[r], 32)
            theirs = torch.cat([a_src, a_tgt])
            worst = max(worst, float((ours[r] - theirs).abs().max()))
            scale = max(scale, float(theirs.abs().max()))
        print(f"stepformer-cli attribute --method ig vs torch, {rows} rows: max |diff| {worst:.2e} "
              f"(attributions up to {scale:.2f})")
        assert worst < 1e-3 * max(scale, 1.0), "the two sides do not compute the same attributions"
    print(f"{'name':32s} {'CPU median':>10s} {'CPU min':>10s} {'wall median':>12s} {'wall min':>10s}  (ms)")

    def row(name, t):
        print(f"{name:32s} {t[0]:10.3f} {t[1]:10.3f} {t[2]:12.3f} {t[3]:10.3f}")

    for steps in (32, 8, 128):
        row(f"torch_ig/{steps}", median_ms(lambda: integrated_gradients(model, src, tgt, rows - 1, TOKEN, steps)))
    row("torch_ig_sentence/32", median_ms(
        lambda: [integrated_gradients(model, src, tgt, r, tokens[r], 32) for r in range(rows)], min_time=1.0,
        min_runs=3))


if __name__ == "__main__":
    main()
