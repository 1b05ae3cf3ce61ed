#!/usr/bin/python3
"""The PyTorch side of bench/bench_gpt2.cpp: GPT-2 small's size in torch eager, on the same weights and threads.

    STEPFORMER_BENCH_GPT2=/tmp/gpt2.safetensors build/bench/bench_gpt2     # writes the weights
    /usr/bin/python3 bench/bench_pytorch_gpt2.py /tmp/gpt2.safetensors [--threads N] [--cli build/app/stepformer-cli]

The model is tests/reference/make_gpt2_fixtures.py's GPT2Reference (written from Hugging Face's modeling_gpt2.py,
eager attention; transformers is not in Debian), its weights read from the file (GPT-2's own tensor names). Timed,
median and minimum of repeated runs in ms (wall time; on one thread CPU time too):
  forward N   the logits (N, 50257) of N tokens, in torch.no_grad(), as GPT2LMHeadModel(ids).logits
  kv_step N   one token's logits with N - 1 tokens of context in the key/value cache (layer_past, as HF's
              past_key_values: the new token's q, k, v, its k and v appended to the cache, attention over all)
With --cli it first checks both sides compute the same thing: `stepformer-cli trace` on 20 tokens, its logits
against torch's.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_bench_env  # noqa: E402

BLAS = torch_bench_env.prepare(sys.argv)
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from make_gpt2_fixtures import GPT2Reference, gelu_new  # noqa: E402


def read_tensors(path):
    """A safetensors file's F32/F16 tensors (as float32 torch tensors) and its __metadata__."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, h in header.items():
        if h["dtype"] not in ("F32", "F16"):
            continue  # (the merges' I8 bytes)
        b, e = h["data_offsets"]
        dtype = np.float32 if h["dtype"] == "F32" else np.float16
        tensors[name] = torch.from_numpy(np.frombuffer(data[b:e], dtype=dtype).reshape(h["shape"]).astype(np.float32))
    return tensors, meta


def read_model(path):
    tensors, meta = read_tensors(path)
    return tensors, json.loads(meta["config"])


def build(path):
    tensors, c = read_model(path)
    model = GPT2Reference(dict(n_embd=c["d_model"], n_head=c["n_heads"], n_layer=c["n_decoder_layers"],
                               n_inner=c["d_ff"], n_positions=c["max_positions"], vocab_size=c["tgt_vocab_size"],
                               layer_norm_epsilon=c["layer_norm_eps"], eos=c["eos_id"])).eval()
    state = {k[len("transformer."):]: v for k, v in tensors.items() if k.startswith("transformer.")}
    missing = model.load_state_dict(state, strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys, missing
    return model


def tokens(n):
    return [(7919 * i + 13) % 50000 for i in range(n)]


def fast_forward(model, ids):
    """GPT2LMHeadModel's forward with no interventions (no head mask, no 4D mask): what HF runs by default."""
    T = ids.size(1)
    hidden = model.wte(ids) + model.wpe(torch.arange(T)[None])
    for block in model.h:
        hidden = block(hidden, None, None, True)
    return torch.nn.functional.linear(model.ln_f(hidden), model.wte.weight)


def kv_step(model, token, position, past):
    """One token through every block with layer_past (B=1): returns logits (V) and the grown cache."""
    x = model.wte.weight[token][None, None] + model.wpe.weight[position][None, None]
    new_past = []
    for block, (pk, pv) in zip(model.h, past):
        a = block.attn
        q, k, v = a.c_attn(block.ln_1(x)).split(a.split_size, dim=2)
        q, k, v = a._split_heads(q), a._split_heads(k), a._split_heads(v)
        k, v = torch.cat((pk, k), dim=-2), torch.cat((pv, v), dim=-2)
        out, _ = a._attn(q, k, v, None, None, False)  # the one new query sees every cached key: nothing to mask
        out = out.permute(0, 2, 1, 3).reshape(1, 1, a.embed_dim)
        x = x + a.c_proj(out)
        x = x + block.mlp(block.ln_2(x))
        new_past.append((k, v))
    return torch.nn.functional.linear(model.ln_f(x), model.wte.weight)[0, 0], new_past


def prefix_cache(model, ids):
    past = [(torch.zeros(1, model.c["n_head"], 0, model.c["n_embd"] // model.c["n_head"]),) * 2 for _ in model.h]
    for i, t in enumerate(ids):
        _, past = kv_step(model, t, i, past)
    return past


def timeit(f, repeat):
    f()
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        f()
        walls.append((time.perf_counter() - w0) * 1e3)
        cpus.append((time.process_time() - c0) * 1e3)
    walls.sort()
    cpus.sort()
    return walls[len(walls) // 2], walls[0], cpus[len(cpus) // 2]


def check_against_cli(cli, model_path, ids, torch_logits):
    """`stepformer-cli trace` on `ids` and torch's logits (T, V) of the same ids: the same computation on both sides."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.safetensors")
        subprocess.run([cli, "trace", model_path, "--src", " ".join(map(str, ids)), "--ids", "--out", out,
                        "--device", "cpu"], check=True, stdout=subprocess.DEVNULL)
        ours, _ = read_tensors(out)
    diff = float((ours["logits"] - torch_logits).abs().max())
    print(f"check: stepformer-cli trace and torch, logits of {len(ids)} tokens: max |difference| {diff:.2e}")
    assert diff < 1e-3, diff


def time_forwards(forward, tokens, lengths):
    """The forward's median, minimum and CPU time at each length (fewer repeats from 256 tokens on)."""
    for n in lengths:
        ids = torch.tensor([tokens(n)])
        med, best, cpu = timeit(lambda: forward(ids), 5 if n >= 256 else 10)
        print(f"forward {n:4d}  median {med:9.2f} ms  min {best:9.2f} ms  cpu {cpu:9.2f} ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cli")
    ap.add_argument("--lengths", default="8,16,32,64,128,256,512")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = build(args.model)
    print(f"torch {torch.__version__}, {args.threads} thread(s), BLAS {BLAS}")
    with torch.no_grad():
        if args.cli:  # the same computation on both sides
            check_against_cli(args.cli, args.model, tokens(20), fast_forward(model, torch.tensor([tokens(20)]))[0])
        time_forwards(lambda ids: fast_forward(model, ids), tokens, [int(x) for x in args.lengths.split(",")])
        for n in (8, 128, 512):
            ids = tokens(n)
            past = prefix_cache(model, ids[:-1])
            med, best, cpu = timeit(lambda: kv_step(model, ids[-1], n - 1, past), 20)
            print(f"kv_step {n:4d}  median {med:9.2f} ms  min {best:9.2f} ms  cpu {cpu:9.2f} ms")


if __name__ == "__main__":
    main()
