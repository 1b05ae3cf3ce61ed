#!/usr/bin/python3
"""The PyTorch side of bench/bench_training.cpp: one training step of the same model in torch eager.

    OMP_NUM_THREADS=2 build/bench/bench_training --benchmark_filter=/128
    /usr/bin/python3 bench/bench_pytorch_training.py --threads 2 --sentences 128

The model is the PyTorch translation tutorial's Seq2SeqTransformer (tests/reference/families.py: nn.Transformer,
batch_first, post-norm, final norms) with d_model 256, 8 heads, 3+3 layers, d_ff 512 and vocabularies of 7859
and 5921 words (Multi30k de-en at min frequency 2), dropout 0.1. A step is: forward on a padded batch of N
sentences whose source and target lengths are uniform in 10..18 words (plus <bos>/<eos>), label-smoothed
cross-entropy (0.1), backward, gradient clipping to norm 1, Adam (0.9, 0.98, 1e-9). Prints target tokens per
second (median of the timed steps), to compare with BM_TrainingStep's target_tokens/s at the same thread count.
With --device cuda the same on the GPU (FP32, TF32 off), to compare with bench_cuda's BM_CudaTrainingStep.
"""
import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_bench_env  # noqa: E402

torch_bench_env.prepare(sys.argv)  # threads and BLAS, before torch is imported
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import families  # noqa: E402

PAD, BOS, EOS = 1, 2, 3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sentences", type=int, default=128)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = ap.parse_args()
    dev = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    cfg = {"d_model": 256, "n_heads": 8, "n_encoder_layers": 3, "n_decoder_layers": 3, "d_ff": 512,
           "src_vocab_size": 7859, "tgt_vocab_size": 5921, "encoder_final_norm": True, "decoder_final_norm": True}
    model = families.build("pytorch-tutorial", cfg, dropout=0.1).to(dev)
    model.train()
    rng = random.Random(2)
    src, tgt = [], []
    for _ in range(args.sentences):
        src.append([BOS] + [rng.randrange(4, 5921) for _ in range(rng.randint(10, 18))] + [EOS])
        tgt.append([rng.randrange(4, 5921) for _ in range(rng.randint(10, 18))])
    S, T = max(map(len, src)), max(len(t) + 1 for t in tgt)
    src_t = torch.tensor([s + [PAD] * (S - len(s)) for s in src], device=dev)
    tin = torch.tensor([[BOS] + t + [PAD] * (T - 1 - len(t)) for t in tgt], device=dev)
    tout = torch.tensor([t + [EOS] + [PAD] * (T - 1 - len(t)) for t in tgt], device=dev)
    target_tokens = int((tout != PAD).sum())
    causal = torch.triu(torch.full((T, T), float("-inf"), device=dev), diagonal=1)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

    def step():
        opt.zero_grad()
        logits = model(src_t, tin, None, causal, src_t == PAD, tin == PAD, src_t == PAD)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tout.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def sync():
        if args.device == "cuda":
            torch.cuda.synchronize()

    step()  # warm-up
    sync()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(f"pytorch {torch.__version__} {args.device} threads={args.threads} sentences={args.sentences} "
          f"target_tokens={target_tokens}: step {1000 * med:.0f} ms median, {target_tokens / med:.0f} target tokens/s")


if __name__ == "__main__":
    main()
