#!/usr/bin/python3
"""The PyTorch CUDA side of bench/bench_cuda.cpp: the same models, weights and sentences in torch eager on the GPU.

    python3 bench/bench_pytorch_cuda.py demo.safetensors base.safetensors [--batch 1 64]

The model files are the ones bench_forward writes (STEPFORMER_BENCH_MODEL, STEPFORMER_BENCH_MODEL_BASE): the
pytorch-tutorial family, built here as in bench/bench_pytorch.py. FP32 with TF32 off (torch's default for matrix
products), inference mode. Times one forward (logits and softmax, output left on the GPU) on N source and N target
tokens for N = 8 .. 512, each batch size, as the median wall time of repeated runs, each ended by
torch.cuda.synchronize(). Prints one line per case, as Google Benchmark names them in bench_cuda.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import torch  # noqa: E402
from bench_pytorch import Seq2SeqTransformer, read_safetensors  # noqa: E402


def load(path):
    tensors, meta = read_safetensors(path)
    model = Seq2SeqTransformer(json.loads(meta["config"]))
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    assert not unexpected and missing == ["positional_encoding.pos_embedding"], (missing, unexpected)
    return model.cuda().eval()


def ids(n, batch, bos):  # the ids of bench_forward.cpp, the same row `batch` times
    row = [4 + (7 * i) % 7000 for i in range(n)]
    if bos:
        row[0] = 2
    return torch.tensor([row] * batch, device="cuda")


def median_ms(fn, min_time=0.5, min_runs=10):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times, start = [], time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times)), float(np.min(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("demo")
    ap.add_argument("base")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 64])
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, TF32 off")
    print(f"{'name (wall time)':40s} {'median ms':>10s} {'min ms':>10s}")
    with torch.inference_mode():
        for label, path in (("", args.demo), ("Base", args.base)):
            model = load(path)
            for batch in args.batch:
                for n in (8, 16, 32, 64, 128, 256, 512):
                    src, tgt = ids(n, batch, False), ids(n, batch, True)
                    med, best = median_ms(lambda: model(src, tgt))
                    name = f"torch_cuda_forward{label}/{n}" + (f"/batch{batch}" if batch != 1 else "")
                    print(f"{name:40s} {med:10.3f} {best:10.3f}", flush=True)
            del model
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
