#!/usr/bin/python3
"""Writes the PyTorch reference fixtures of the logit lens: tests/fixtures/logit_lens/*.lens.safetensors.

Development time only (Debian's python3-torch, run with /usr/bin/python3); the files it writes are committed
and read by tests/unit/test_logit_lens.cpp, so CI needs no torch.

The logit lens (nostalgebraist, 2020) of layer l: what follows the last layer of the model's last stack, applied
to layer l's output instead. For each case below it reads the committed forward fixture (the torch-computed
output of every layer, "dec.l.out" or "enc.l.out", written by the family's own fixture script) and the model's
parameters under the family's own names (the model file, or the Hugging Face folder), and computes, in float64
with torch's functional ops, written here from each family's own module:
  pytorch-tutorial  nn.Transformer's decoder norm (transformer.decoder.norm), then the generator Linear
  seq2seq-tutorial  the decoder's fc_out (no final norm)
  marian            MarianMTModel: the tied lm_head (model.shared) plus final_logits_bias (no final norm)
  gpt2              GPT2LMHeadModel: transformer.ln_f, then the tied lm_head (transformer.wte)
  bert              BertForMaskedLM over its encoder: cls.predictions.transform (dense, erf GELU, LayerNorm),
                    then the tied decoder (bert.embeddings.word_embeddings) plus cls.predictions.bias
It ASSERTS that the last layer's lens equals the fixture's own logits (the torch module's), and writes
  <case>.lens.safetensors   logit_lens.dec.L (T, V) per decoder layer (logit_lens.enc.L (S, V) for BERT);
                            __metadata__: trace (the forward fixture, relative to tests/fixtures), case
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_forward_fixtures import write_safetensors  # noqa: E402  (F32 and I64 tensors, metadata)

FIXTURES = os.path.join(HERE, "..", "fixtures")
OUT_DIR = os.path.join(FIXTURES, "logit_lens")


def read_safetensors(path):
    """name -> float64 torch tensor, and the metadata."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "BF16": None}[info["dtype"]]
        a, b = info["data_offsets"]
        arr = np.frombuffer(data[a:b], dtype=np.dtype(dtype).newbyteorder("<")).reshape(info["shape"])
        out[name] = torch.from_numpy(arr.astype(np.float64))
    return out, header.get("__metadata__", {})


def layer_norm(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def gelu(x):  # BERT's hidden_act "gelu": the exact erf form
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


# The part of each family's module that follows the last layer: hidden (N, C) -> logits (N, V).
def head_pytorch_tutorial(p, cfg):
    y = layer_norm(p["_x"], p["transformer.decoder.norm.weight"], p["transformer.decoder.norm.bias"], 1e-5)
    return y @ p["generator.weight"].T + p["generator.bias"]


def head_seq2seq(p, cfg):
    return p["_x"] @ p["decoder.fc_out.weight"].T + p["decoder.fc_out.bias"]


def head_marian(p, cfg):
    return p["_x"] @ p["model.shared.weight"].T + p["final_logits_bias"].reshape(-1)


def head_gpt2(p, cfg):
    y = layer_norm(p["_x"], p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], cfg["layer_norm_epsilon"])
    return y @ p["transformer.wte.weight"].T


def head_bert(p, cfg):
    eps = cfg["layer_norm_eps"]
    t = p["_x"] @ p["cls.predictions.transform.dense.weight"].T + p["cls.predictions.transform.dense.bias"]
    t = layer_norm(gelu(t), p["cls.predictions.transform.LayerNorm.weight"],
                   p["cls.predictions.transform.LayerNorm.bias"], eps)
    return t @ p["bert.embeddings.word_embeddings.weight"].T + p["cls.predictions.bias"]


# (case, forward fixture under tests/fixtures, the stack read, the head): one per family and norm placement, and
# cases with interventions (the lens reads what the pass computed with them).
CASES = [
    ("pt_pre", "forward/pt_pre.trace.safetensors", "dec", head_pytorch_tutorial),
    ("pt_post", "forward/pt_post.trace.safetensors", "dec", head_pytorch_tutorial),
    ("s2s_learned", "forward/s2s_learned.trace.safetensors", "dec", head_seq2seq),
    ("marian_plain", "marian/marian_plain.trace.safetensors", "dec", head_marian),
    ("marian_heads_off", "marian/marian_heads_off.trace.safetensors", "dec", head_marian),
    ("gpt2_plain", "gpt2/gpt2_plain.trace.safetensors", "dec", head_gpt2),
    ("gpt2_head_off", "gpt2/gpt2_head_off.trace.safetensors", "dec", head_gpt2),
    ("bert_plain", "bert/bert_plain.trace.safetensors", "enc", head_bert),
    ("bert_painted", "bert/bert_painted.trace.safetensors", "enc", head_bert),
]


def model_parameters(trace_path, meta):
    model = os.path.join(os.path.dirname(trace_path), meta["model"])
    if os.path.isdir(model):
        params, _ = read_safetensors(os.path.join(model, "model.safetensors"))
        with open(os.path.join(model, "config.json")) as f:
            return params, json.load(f)
    params, model_meta = read_safetensors(model)
    return params, json.loads(model_meta.get("config", "{}"))


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for case, rel, stack, head in CASES:
        trace_path = os.path.join(FIXTURES, rel)
        trace, meta = read_safetensors(trace_path)
        params, cfg = model_parameters(trace_path, meta)
        layers = sorted(int(k.split(".")[1]) for k in trace if k.startswith(stack + ".") and k.endswith(".out")
                        and k.split(".")[1].isdigit())
        out = {}
        for l in layers:
            x = trace["%s.%d.out" % (stack, l)]
            logits = head(dict(params, _x=x), cfg)
            out["logit_lens.%s.%d" % (stack, l)] = logits.numpy().astype(np.float32)
        last = out["logit_lens.%s.%d" % (stack, layers[-1])]
        worst = float(np.abs(last - trace["logits"].numpy()).max())
        assert worst < 1e-5, (case, worst)
        write_safetensors(os.path.join(OUT_DIR, case + ".lens.safetensors"), out,
                          {"trace": rel, "case": case, "stack": stack})
        print("%s: %d layers, %s, last layer vs the module's logits: %.2e" % (case, len(layers), last.shape, worst))


if __name__ == "__main__":
    main()
