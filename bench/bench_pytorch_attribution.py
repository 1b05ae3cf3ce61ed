#!/usr/bin/python3
"""The PyTorch side of bench/bench_attribution.cpp: integrated gradients on the shipped translator's weights, the
same ids and thread count, with autograd in torch eager.

    STEPFORMER_BENCH_ATTRIBUTION=/tmp/de-en.pt.safetensors build/bench/bench_attribution   # writes the weights
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/bench_pytorch_attribution.py /tmp/de-en.pt.safetensors \
        --cli build/app/stepformer-cli

The file holds the pytorch-tutorial family's names; the tutorial's Seq2SeqTransformer (bench_pytorch.py:
nn.Transformer, post-norm, ReLU, batch_first) is built around them. Integrated gradients as a PyTorch user writes
them (and as Captum batches them): the token embeddings x = E[id] sqrt(d_model) of both sides, the N scaled copies
k/N x (k = 1..N) and the baseline (k = 0) as one batch of N + 1 through the model, f = log_softmax(logits[:, row])
[token] summed over the copies and backpropagated once, a_i = x_i . mean_k(df/dx_i(k/N x)). Times the last row's
(ig/N, the one prediction of BM_IntegratedGradients/N) and every row's (ig_sentence/32: 20 such batches) with
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

from bench_pytorch import Seq2SeqTransformer, median_ms, read_safetensors  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402

TOKEN = 17  # the token scored at the last row, as bench_attribution.cpp


def source_ids():
    return [4 + (7 * i) % 7000 for i in range(19)] + [3]


def target_ids():
    return [2] + [4 + (11 * i) % 5000 for i in range(1, 20)]


def integrated_gradients(model, src, tgt, row, token, steps):
    """(source (S), target (T)) attributions, f, f(0): one batch of steps + 1 copies, one backward."""
    C = model.transformer.d_model
    xs = model.src_tok_emb.embedding(src) * math.sqrt(C)  # (1, S, C)
    xt = model.tgt_tok_emb.embedding(tgt) * math.sqrt(C)  # (1, T, C)
    alpha = torch.arange(steps + 1, dtype=torch.float32).view(-1, 1, 1) / steps  # (B, 1, 1)
    s = (alpha * xs.detach()).requires_grad_(True)  # (B, S, C)
    t = (alpha * xt.detach()).requires_grad_(True)  # (B, T, C)
    memory = model.transformer.encoder(model.positional_encoding(s))
    mask = model.transformer.generate_square_subsequent_mask(tgt.size(1))
    out = model.transformer.decoder(model.positional_encoding(t), memory, tgt_mask=mask)
    logits = model.generator(out[:, row])  # (B, V)
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
    c = json.loads(meta["config"])
    model = Seq2SeqTransformer(c)
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    assert not unexpected and missing == ["positional_encoding.pos_embedding"], (missing, unexpected)
    model.eval()
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
