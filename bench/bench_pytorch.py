#!/usr/bin/python3
"""The PyTorch side of bench/bench_forward.cpp: the same model, weights, sentences and thread count in torch eager.

    STEPFORMER_BENCH_MODEL=/tmp/bench_model.safetensors build/bench/bench_forward   # writes the weights
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/bench_pytorch.py /tmp/bench_model.safetensors

The model file holds the pytorch-tutorial family's names (d_model 256, 3+3 layers, 8 heads, d_ff 512, 8000-token
vocabularies); this script builds the tutorial's Seq2SeqTransformer (nn.Transformer, batch_first) around them,
checks it against the file, and times, with torch.set_num_threads(1) (override: --threads N):
  forward     the whole model on N source and N target tokens (logits and softmax, like the traced forward)
  step        the logits of one more token by recomputing the decoder on the prefix (what torch eager does
              without a cache), for comparison with BM_DecodeStepRecompute / BM_DecodeStepKvCache
Reports the median and the minimum of repeated runs in ms, CPU time and wall time (on one thread compare the CPU
time with Google Benchmark's CPU column; on several, the wall time with its real_time: CPU time adds up threads).
Threads: torch.set_num_threads and OPENBLAS_NUM_THREADS (torch_bench_env.py: Debian's torch calls the system BLAS).
With --cli PATH (build/app/stepformer-cli) it first checks that both sides compute the same thing: it runs
`stepformer-cli trace` on the 20-token sentence pair and compares its logits with torch's.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_bench_env  # noqa: E402

BLAS = torch_bench_env.prepare(sys.argv)  # threads and BLAS, before torch is imported
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    dtypes = {"F32": np.float32, "F16": np.float16, "F64": np.float64}
    tensors = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        arr = np.frombuffer(data[b:e], dtype=dtypes[h["dtype"]]).reshape(h["shape"]).astype(np.float32)
        tensors[name] = torch.from_numpy(arr.copy())
    return tensors, meta


class TokenEmbedding(nn.Module):  # as in the PyTorch translation tutorial
    def __init__(self, vocab_size, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size, maxlen=5000):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pe = torch.zeros((maxlen, emb_size))
        pe[:, 0::2] = torch.sin(pos * den)
        pe[:, 1::2] = torch.cos(pos * den)
        self.register_buffer("pos_embedding", pe)

    def forward(self, x):
        return x + self.pos_embedding[: x.size(1)].unsqueeze(0)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = nn.Transformer(d_model=c["d_model"], nhead=c["n_heads"],
                                          num_encoder_layers=c["n_encoder_layers"],
                                          num_decoder_layers=c["n_decoder_layers"], dim_feedforward=c["d_ff"],
                                          dropout=0.0, batch_first=True)
        self.generator = nn.Linear(c["d_model"], c["tgt_vocab_size"])
        self.src_tok_emb = TokenEmbedding(c["src_vocab_size"], c["d_model"])
        self.tgt_tok_emb = TokenEmbedding(c["tgt_vocab_size"], c["d_model"])
        self.positional_encoding = PositionalEncoding(c["d_model"], c["max_positions"])

    def encode(self, src):
        return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)))

    def decode(self, tgt, memory):
        mask = self.transformer.generate_square_subsequent_mask(tgt.size(1))
        return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask=mask)

    def forward(self, src, tgt):
        logits = self.generator(self.decode(tgt, self.encode(src)))
        return torch.softmax(logits, -1)


def sentence(n, bos):  # the same ids as bench_forward.cpp
    ids = [4 + (7 * i) % 7000 for i in range(n)]
    if bos:
        ids[0] = 2
    return torch.tensor([ids])


def median_ms(fn, min_time=0.5, min_runs=5):
    """Median and minimum of one call's time: the process's CPU time (other processes on a busy machine do not
    count; on one thread compare with Google Benchmark's CPU column) and the wall time (on several threads the CPU
    time adds up every thread's: compare the wall time with the benchmarks' real_time)."""
    fn()
    cpu, wall, start = [], [], time.perf_counter()
    while len(cpu) < min_runs or time.perf_counter() - start < min_time:
        t0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append((time.process_time() - t0) * 1e3)
        wall.append((time.perf_counter() - w0) * 1e3)
    return float(np.median(cpu)), float(np.min(cpu)), float(np.median(wall)), float(np.min(wall))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cli", help="stepformer-cli, to check that its trace's logits equal torch's")
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
    if args.cli:
        src, tgt = sentence(20, False), sentence(20, True)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "trace.safetensors")
            subprocess.run([args.cli, "trace", args.model, "--ids", "--src", " ".join(map(str, src[0].tolist())),
                            "--tgt", " ".join(map(str, tgt[0].tolist())), "--out", out], check=True,
                           stdout=subprocess.DEVNULL)
            ours = read_safetensors(out)[0]["logits"]
        with torch.inference_mode():
            theirs = model.generator(model.decode(tgt, model.encode(src)))[0]
        err = (ours - theirs).abs().max().item()
        print(f"stepformer-cli trace logits vs torch: max |diff| {err:.2e} (logits up to {theirs.abs().max():.1f})")
        assert err < 1e-3, "the two sides do not compute the same model"
    print(f"{'name':32s} {'CPU median':>10s} {'CPU min':>10s} {'wall median':>12s} {'wall min':>10s}  (ms)")
    def row(name, t):
        print(f"{name:32s} {t[0]:10.3f} {t[1]:10.3f} {t[2]:12.3f} {t[3]:10.3f}")

    with torch.inference_mode():
        for n in (20, 8, 16, 32, 64, 128, 256):
            src, tgt = sentence(n, False), sentence(n, True)
            row('torch_forward/' + str(n), median_ms(lambda: model(src, tgt)))
        memory = model.encode(sentence(20, False))
        for n in (8, 20, 64, 128):
            tgt = sentence(n, True)
            row('torch_step_recompute/' + str(n), median_ms(lambda: model.generator(model.decode(tgt, memory)[:, -1])))


if __name__ == "__main__":
    main()
