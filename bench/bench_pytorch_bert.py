#!/usr/bin/python3
"""The PyTorch side of bench/bench_bert.cpp: BERT-base's size in torch eager, on the same weights and threads.

    STEPFORMER_BENCH_BERT=/tmp/bert.safetensors build/bench/bench_bert     # writes the weights
    /usr/bin/python3 bench/bench_pytorch_bert.py /tmp/bert.safetensors [--threads N] [--cli build/app/stepformer-cli]

The model is tests/reference/make_bert_fixtures.py's BertReference (written from Hugging Face's modeling_bert.py,
eager attention; transformers is not in Debian), its weights read from the file (BERT's own tensor names). Timed,
median and minimum of repeated runs in ms (wall time; on one thread CPU time too):
  forward N   the logits (N, 30522) of N tokens, in torch.no_grad(), as BertForMaskedLM(ids).logits: the
              embeddings with their norm, 12 post-norm layers (the additive attention mask of zeros that HF's
              forward builds from an all-ones attention_mask; no head mask), the masked-LM head, the tied output
With --cli it first checks both sides compute the same thing: `stepformer-cli trace` on 20 tokens, its logits
against torch's.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_bench_env  # noqa: E402

BLAS = torch_bench_env.prepare(sys.argv)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from bench_pytorch_gpt2 import check_against_cli, read_tensors, time_forwards  # noqa: E402
from make_bert_fixtures import BertReference  # noqa: E402


def build(path):
    tensors, meta = read_tensors(path)
    c = json.loads(meta["config"])
    model = BertReference(dict(hidden_size=c["d_model"], num_attention_heads=c["n_heads"],
                               num_hidden_layers=c["n_encoder_layers"], intermediate_size=c["d_ff"],
                               max_position_embeddings=c["max_positions"], type_vocab_size=c["type_vocab_size"],
                               layer_norm_eps=c["layer_norm_eps"], hidden_act="gelu", vocab_size=c["src_vocab_size"],
                               pad_token_id=c["pad_id"], name_or_path="bench")).eval()
    state = {k: v for k, v in tensors.items() if k != "cls.predictions.decoder.weight"}
    missing = model.load_state_dict(state, strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys, missing
    return model


def tokens(n):
    return [101] + [1000 + (7919 * i + 13) % 29000 for i in range(1, n - 1)] + [102]


def fast_forward(model, ids):
    """BertForMaskedLM's forward as HF runs it for one unpadded text: no head mask, a mask of zeros."""
    T = ids.size(1)
    hidden = model.bert.embeddings(ids, True)
    zeros = torch.zeros(1, 1, 1, T)
    for layer in model.bert.encoder.layer:
        hidden = layer(hidden, zeros, 1.0)
    t = model.cls.predictions.transform(hidden)
    return F.linear(t, model.bert.embeddings.word_embeddings.weight) + model.cls.predictions.bias


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


if __name__ == "__main__":
    main()
