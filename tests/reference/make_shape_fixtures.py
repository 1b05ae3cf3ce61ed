#!/usr/bin/python3
"""Writes the PyTorch reference fixtures of the two other Transformer shapes: tests/fixtures/shapes/*.safetensors.

Development time only (Debian's python3-torch, run with /usr/bin/python3); the files it writes are committed and
read by tests/unit/test_shapes_pytorch.cpp, so CI needs no torch.

The shapes (core/model/config.h, config.stacks):
  decoder_only  GPT: one causal self-attention stack, no encoder and no cross-attention, predicting the next token;
                the torch module is nn.TransformerEncoder with a causal mask (a decoder without cross-attention
                is exactly that layer), token and position embeddings, a final norm (GPT-2's ln_f) and an output
                projection tied to the token embedding or not
  encoder_only  BERT: one bidirectional stack over a padded sentence (key padding mask), an output for every token
Each model is random (a fixed seed), with a word vocabulary of our own. For every case the pass is recomputed step by
step with torch functional ops under the trace's names (docs/trace.md; the decoder-only layer's feed-forward block is
block 3, residual3 and norm3, as the encoder-decoder's), the stepwise logits are ASSERTED equal to the torch module's
own output (where the module can run the case: every head on, positions on, the causal mask on), and written:
  <model>.model.safetensors   a Stepformer model file ("stepformer" family: our own tensor names), config, vocabularies
  <case>.trace.safetensors    ids.src / ids.tgt (as F32) and every expected intermediate; __metadata__: model,
                              interventions (JSON), family, case
  <model>.training.safetensors  one training step on a padded batch: ids.src, ids.tgt_in, ids.tgt_out (I64), the
                              label-smoothed loss (metadata) and grad.<name> of every parameter (torch autograd)
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_forward_fixtures import write_safetensors  # noqa: E402  (the one safetensors writer of the fixtures)

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "shapes")
UNK, PAD, BOS, EOS = 0, 1, 2, 3
WORDS = ["<unk>", "<pad>", "<bos>", "<eos>", "the", "a", "dog", "cat", "runs", "sees", "big", "small", "red", "ball"]
# A masked language model's vocabulary: the same words and [MASK] (config mask_id), for the app's fill in the blank.
MASK = len(WORDS)
MLM_WORDS = WORDS + ["[MASK]"]
SMOOTHING = 0.1


def sinusoid_table(P, C):
    """The paper's table, interleaved: column 2i sin, 2i+1 cos of pos / 10000^(2i/C) (float32 arithmetic)."""
    pos = torch.arange(P, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, C, 2, dtype=torch.float32) * (-math.log(10000.0) / C))
    table = torch.zeros(P, C)
    table[:, 0::2] = torch.sin(pos * div)
    table[:, 1::2] = torch.cos(pos * div)
    return table


class ShapeModel(nn.Module):
    """One stack of nn.TransformerEncoderLayer (causal for decoder-only), embeddings, an optional final norm and the
    output head. Its parameters are renamed to ours by stepformer_names()."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        C, V = c["d_model"], c["vocab"]
        self.embedding = nn.Embedding(V, C)
        self.positions = nn.Embedding(c["max_positions"], C) if c["positional_encoding"] == "learned" else None
        layer = nn.TransformerEncoderLayer(C, c["n_heads"], c["d_ff"], dropout=0.0, activation=c["activation"],
                                           batch_first=True, norm_first=c["norm_placement"] == "pre")
        self.layers = nn.TransformerEncoder(layer, c["n_layers"], enable_nested_tensor=False)
        self.final_norm = nn.LayerNorm(C) if c["final_norm"] else None
        self.head = nn.Linear(C, V, bias=c["output_bias"])
        if c["tie"]:
            self.head.weight = self.embedding.weight
        with torch.no_grad():  # biases and norms away from their initial 0 and 1, so that a wrong one shows
            for name, p in self.named_parameters():
                if name.endswith("bias") or "norm" in name:
                    p.add_(0.1 * torch.randn_like(p))

    def scale(self):
        return math.sqrt(self.c["d_model"]) if self.c["embedding_scale"] == "sqrt_d_model" else 1.0

    def forward(self, ids):
        T = ids.size(1)
        x = self.embedding(ids) * self.scale() + self.position_table()[:T][None]
        causal = nn.Transformer.generate_square_subsequent_mask(T) if self.c["stacks"] == "decoder_only" else None
        x = self.layers(x, mask=causal, src_key_padding_mask=(ids == PAD) if self.c["stacks"] == "encoder_only" else None)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return self.head(x)

    def position_table(self):
        if self.positions is not None:
            return self.positions.weight
        return sinusoid_table(self.c["max_positions"], self.c["d_model"])


def stepformer_names(model):
    """Our tensor names (the 'stepformer' family, core/model/weights.h for_each_weight) -> tensors."""
    c = model.c
    C = c["d_model"]
    stack = "decoder" if c["stacks"] == "decoder_only" else "encoder"
    side = "tgt" if stack == "decoder" else "src"
    out = {f"{side}_embedding.weight": model.embedding.weight}
    if model.positions is not None:
        out[f"{side}_positions.weight"] = model.positions.weight
    for l, layer in enumerate(model.layers.layers):
        p = f"{stack}.layers.{l}."
        w, b = layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias
        for i, name in enumerate("qkv"):
            out[p + f"self_attn.{name}.weight"] = w[i * C:(i + 1) * C]
            out[p + f"self_attn.{name}.bias"] = b[i * C:(i + 1) * C]
        out[p + "self_attn.out.weight"] = layer.self_attn.out_proj.weight
        out[p + "self_attn.out.bias"] = layer.self_attn.out_proj.bias
        out[p + "self_attn_norm.weight"] = layer.norm1.weight
        out[p + "self_attn_norm.bias"] = layer.norm1.bias
        out[p + "ffn.fc1.weight"] = layer.linear1.weight
        out[p + "ffn.fc1.bias"] = layer.linear1.bias
        out[p + "ffn.fc2.weight"] = layer.linear2.weight
        out[p + "ffn.fc2.bias"] = layer.linear2.bias
        out[p + "ffn_norm.weight"] = layer.norm2.weight
        out[p + "ffn_norm.bias"] = layer.norm2.bias
    if model.final_norm is not None:
        out[f"{stack}.norm.weight"] = model.final_norm.weight
        out[f"{stack}.norm.bias"] = model.final_norm.bias
    if not c["tie"]:
        out["generator.weight"] = model.head.weight
    if c["output_bias"]:
        out["generator.bias"] = model.head.bias
    return out


def our_config(c):
    """The config JSON of our model file (core/model/config.h)."""
    decoder = c["stacks"] == "decoder_only"
    return {"stacks": c["stacks"], "d_model": c["d_model"], "n_heads": c["n_heads"],
            "n_encoder_layers": 0 if decoder else c["n_layers"], "n_decoder_layers": c["n_layers"] if decoder else 0,
            "d_ff": c["d_ff"], "src_vocab_size": 0 if decoder else c["vocab"],
            "tgt_vocab_size": c["vocab"] if decoder else 0, "max_positions": c["max_positions"],
            "positional_encoding": c["positional_encoding"], "sinusoid_layout": "interleaved",
            "embedding_scale": c["embedding_scale"], "norm_placement": c["norm_placement"],
            "encoder_final_norm": c["final_norm"] and not decoder, "decoder_final_norm": c["final_norm"] and decoder,
            "activation": c["activation"], "attention": "split_heads", "layer_norm_eps": 1e-5, "bias": True,
            "output_head": "linear", "output_bias": c["output_bias"], "tie_output_embedding": c["tie"],
            "share_embeddings": False, "pad_id": PAD, "bos_id": BOS, "eos_id": EOS, "unk_id": UNK,
            **({"mask_id": c["mask_id"]} if "mask_id" in c else {})}


def layer_norm(trace, name, x, norm):
    mean = x.mean(-1)
    std = torch.sqrt(x.var(-1, unbiased=False) + norm.eps)
    out = F.layer_norm(x, (x.size(-1),), norm.weight, norm.bias, norm.eps)
    trace[name], trace[name + "_mean"], trace[name + "_std"] = out, mean, std
    return out


def attention(trace, p, x, attn, H, blocked, head_off):
    """One self-attention block step by step: q, k, v, scores, mask, probs, head_out, heads_out, attn_out."""
    T, C = x.shape
    D = C // H
    w, b = attn.in_proj_weight, attn.in_proj_bias
    q, k, v = [(x @ w[i * C:(i + 1) * C].T + b[i * C:(i + 1) * C]).view(T, H, D).transpose(0, 1) for i in range(3)]
    scores = q @ k.transpose(1, 2) / math.sqrt(D)
    probs = torch.softmax(scores.masked_fill(blocked[None], float("-inf")), dim=-1)
    head_out = probs @ v
    on = torch.tensor([0.0 if h in head_off else 1.0 for h in range(H)])[:, None, None]
    head_out = head_out * on
    heads_out = head_out.transpose(0, 1).reshape(T, C)
    out = heads_out @ attn.out_proj.weight.T + attn.out_proj.bias
    trace.update({p + ".q": q, p + ".k": k, p + ".v": v, p + ".scores": scores,
                  p + ".mask": blocked[None].expand(H, T, T).float(), p + ".probs": probs, p + ".head_out": head_out,
                  p + ".heads_out": heads_out, p + ".attn_out": out})
    return out


def activation(c, x):
    return F.gelu(x) if c["activation"] == "gelu" else F.relu(x)


def stepwise(model, ids, iv):
    """The pass over one sequence under the trace's names (decoder-only: tgt/dec; encoder-only: src/enc)."""
    c = model.c
    decoder = c["stacks"] == "decoder_only"
    side, stack = ("tgt", "dec") if decoder else ("src", "enc")
    T = ids.size(0)
    trace = {}
    tok = model.embedding.weight[ids] * model.scale()
    pos = model.position_table()[:T] if iv["positional_encoding"] else torch.zeros(T, c["d_model"])
    x = tok + pos
    trace[f"{side}.tok_embed"], trace[f"{side}.pos"], trace[f"{stack}.in"] = tok, pos, x
    if decoder:
        blocked = torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if iv["causal_mask"] else torch.zeros(T, T, dtype=torch.bool)
        blocked = blocked | (ids == PAD)[None, :]  # bos != pad: the decoder's self-attention masks pad keys too
    else:
        blocked = (ids == PAD)[None, :].expand(T, T).clone()
    pre = c["norm_placement"] == "pre"
    ffn_r, ffn_n = ("residual3", "norm3") if decoder else ("residual2", "norm2")
    for l, layer in enumerate(model.layers.layers):
        p = f"{stack}.{l}"
        off = {h for (kind, ll, h) in iv["heads_off"] if ll == l}

        def ffn(h):
            pre_act = h @ layer.linear1.weight.T + layer.linear1.bias
            hidden = activation(c, pre_act)
            out = hidden @ layer.linear2.weight.T + layer.linear2.bias
            trace[p + ".ffn_hidden_pre"], trace[p + ".ffn_hidden"], trace[p + ".ffn_out"] = pre_act, hidden, out
            return out

        if pre:
            n1 = layer_norm(trace, p + ".norm1", x, layer.norm1)
            r1 = x + attention(trace, p + ".self_attn", n1, layer.self_attn, c["n_heads"], blocked, off)
            trace[p + ".residual1"] = r1
            n2 = layer_norm(trace, f"{p}.{ffn_n}", r1, layer.norm2)
            r2 = r1 + ffn(n2)
            trace[f"{p}.{ffn_r}"] = r2
            x = r2
        else:
            r1 = x + attention(trace, p + ".self_attn", x, layer.self_attn, c["n_heads"], blocked, off)
            trace[p + ".residual1"] = r1
            n1 = layer_norm(trace, p + ".norm1", r1, layer.norm1)
            r2 = n1 + ffn(n1)
            trace[f"{p}.{ffn_r}"] = r2
            x = layer_norm(trace, f"{p}.{ffn_n}", r2, layer.norm2)
        trace[p + ".out"] = x
    if model.final_norm is not None:
        normed = layer_norm(trace, f"{stack}.final_norm", x, model.final_norm)
        del trace[f"{stack}.final_norm"]  # the trace keeps its mean and std; the output is {stack}.out
        x = normed
    trace[f"{stack}.out"] = x
    logits = model.head(x)
    trace["logits"], trace["probs"] = logits, torch.softmax(logits, -1)
    return trace


MODELS = [
    # GPT-2's layout: pre-norm, learned positions, GELU, a final norm, the output tied to the token embedding
    dict(name="gpt_pre", stacks="decoder_only", norm_placement="pre", positional_encoding="learned", activation="gelu",
         embedding_scale="one", final_norm=True, tie=True, output_bias=False),
    # the paper's post-norm decoder without cross-attention: sinusoids, ReLU, scaled embeddings, its own output
    dict(name="gpt_post", stacks="decoder_only", norm_placement="post", positional_encoding="sinusoidal",
         activation="relu", embedding_scale="sqrt_d_model", final_norm=False, tie=False, output_bias=True),
    # BERT's layout: post-norm, learned positions, GELU, an output head tied to the embedding, with a bias
    dict(name="bert_post", stacks="encoder_only", norm_placement="post", positional_encoding="learned",
         activation="gelu", embedding_scale="one", final_norm=False, tie=True, output_bias=True),
    # a pre-norm encoder with sinusoids and a final norm, untied
    dict(name="bert_pre", stacks="encoder_only", norm_placement="pre", positional_encoding="sinusoidal",
         activation="relu", embedding_scale="sqrt_d_model", final_norm=True, tie=False, output_bias=True),
]

MLM_MODEL = dict(name="bert_mlm", stacks="encoder_only", norm_placement="post", positional_encoding="learned",
                 activation="gelu", embedding_scale="one", final_norm=False, tie=True, output_bias=True,
                 vocab=len(MLM_WORDS), words=MLM_WORDS, mask_id=MASK)

# Each case: its model, the sequence, and the interventions (every one of them is what the app offers).
CASES = [
    ("gpt_pre", "plain", [BOS, 4, 6, 8, 5, 7], {}),
    ("gpt_pre", "head_off", [BOS, 4, 6, 8, 5, 7], {"heads_off": [("dec", 1, 0)]}),
    ("gpt_pre", "no_causal", [BOS, 4, 6, 8, 5, 7], {"causal_mask": False}),
    ("gpt_pre", "no_positions", [BOS, 4, 6, 8, 5, 7], {"positional_encoding": False}),
    ("gpt_post", "plain", [BOS, 10, 6, 9, 4, 7, 8], {}),
    ("gpt_post", "all_off", [BOS, 10, 6, 9, 4, 7, 8],
     {"heads_off": [("dec", 0, 1)], "causal_mask": False, "positional_encoding": False}),
    ("bert_post", "plain", [BOS, 4, 6, 8, EOS, PAD, PAD], {}),
    ("bert_post", "head_off", [BOS, 4, 6, 8, EOS, PAD, PAD], {"heads_off": [("enc", 0, 1)]}),
    ("bert_post", "no_positions", [BOS, 4, 6, 8, EOS, PAD, PAD], {"positional_encoding": False}),
    ("bert_pre", "plain", [BOS, 12, 13, 9, 5, 11, EOS], {}),
    ("bert_pre", "all_off", [BOS, 12, 13, 9, 5, 11, EOS],
     {"heads_off": [("enc", 1, 0)], "positional_encoding": False}),
]


def build(spec, seed):
    torch.manual_seed(seed)
    c = dict(spec, d_model=8, n_heads=2, d_ff=16, n_layers=2, max_positions=16)
    c.setdefault("vocab", len(WORDS))
    return ShapeModel(c).eval()


def model_file(model):
    c = model.c
    tensors = {n: t.detach().numpy().astype(np.float32) for n, t in stepformer_names(model).items()}
    side = "tgt_vocab" if c["stacks"] == "decoder_only" else "src_vocab"
    meta = {"format": "stepformer-model", "format_version": "1", "family": "stepformer",
            "config": json.dumps(our_config(c)), side: json.dumps(c.get("words", WORDS)),
            "provenance": json.dumps({"written_by": "tests/reference/make_shape_fixtures.py", "weights": "random"})}
    return tensors, meta


def training_reference(model):
    """One step on a padded batch of three sequences: the label-smoothed loss and every parameter's gradient."""
    c = model.c
    decoder = c["stacks"] == "decoder_only"
    rows = [[BOS, 4, 6, 8, 5, EOS], [BOS, 10, 7, EOS], [BOS, 12, 13, 9, 11, 5]]
    width = max(len(r) for r in rows)
    padded = torch.tensor([r + [PAD] * (width - len(r)) for r in rows])
    model.zero_grad()
    if decoder:  # the next token of each position: inputs all but the last, targets all but the first
        tin, tout = padded[:, :-1], padded[:, 1:]
        src = torch.zeros(3, 0, dtype=torch.long)
    else:  # a masked-LM-like target for each position: here the token two places on (pad where there is none)
        src = padded
        tout = torch.full_like(padded, PAD)
        tout[:, :-2] = padded[:, 2:]
        tout[padded == PAD] = PAD
        tin = torch.zeros(3, 0, dtype=torch.long)
    # Decoder-only: the module applies the causal mask only, our pass masks pad keys too; a pad key sits after
    # every real row's position (blocked by the causal mask anyway), so only pad rows, outside the loss, differ.
    logits = model(tin if decoder else src)
    loss = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=SMOOTHING)(logits.reshape(-1, logits.size(-1)),
                                                                             tout.reshape(-1))
    loss.backward()
    grads = {}
    for name, t in stepformer_names(model).items():
        g = t.grad if t.is_leaf else None  # the q, k, v slices are views: taken from in_proj below
        grads[name] = g
    # The slices of in_proj_weight share its .grad: take them from the parent.
    C = c["d_model"]
    stack = "decoder" if decoder else "encoder"
    for l, layer in enumerate(model.layers.layers):
        p = f"{stack}.layers.{l}.self_attn."
        for i, n in enumerate("qkv"):
            grads[p + n + ".weight"] = layer.self_attn.in_proj_weight.grad[i * C:(i + 1) * C]
            grads[p + n + ".bias"] = layer.self_attn.in_proj_bias.grad[i * C:(i + 1) * C]
    tensors = {"ids.src": src.numpy().astype(np.int64), "ids.tgt_in": tin.numpy().astype(np.int64),
               "ids.tgt_out": tout.numpy().astype(np.int64)}
    for name, g in grads.items():
        assert g is not None, name
        tensors["grad." + name] = g.detach().numpy().astype(np.float32)
    return tensors, {"loss": repr(float(loss)), "label_smoothing": str(SMOOTHING), "model": model.c["name"] + ".model.safetensors"}


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    torch.set_num_threads(1)
    models = {}
    for i, spec in enumerate(MODELS):
        model = build(spec, 1000 + i)
        models[spec["name"]] = model
        tensors, meta = model_file(model)
        write_safetensors(os.path.join(OUT_DIR, spec["name"] + ".model.safetensors"), tensors, meta)
    for name, case, ids, given in CASES:
        model = models[name]
        iv = {"causal_mask": True, "padding_mask": True, "positional_encoding": True, "heads_off": []}
        iv.update(given)
        with torch.no_grad():
            trace = stepwise(model, torch.tensor(ids), iv)
            if iv == {"causal_mask": True, "padding_mask": True, "positional_encoding": True, "heads_off": []}:
                module = model(torch.tensor([ids]))[0]
                # The module cannot mask pad keys of a causal stack row by row as our decoder does; the cases
                # have no pad there. Its logits must equal the stepwise ones.
                assert torch.allclose(module, trace["logits"], atol=1e-5), (name, case, (module - trace["logits"]).abs().max())
        side = "ids.tgt" if model.c["stacks"] == "decoder_only" else "ids.src"
        tensors = {side: np.array(ids, dtype=np.float32)}
        tensors.update({n: t.detach().numpy().astype(np.float32) for n, t in trace.items()})
        meta_iv = {"causal_mask": iv["causal_mask"], "padding_mask": iv["padding_mask"],
                   "positional_encoding": iv["positional_encoding"],
                   "heads_off": [f"{k}.{l}.{h}" for (k, l, h) in iv["heads_off"]]}
        write_safetensors(os.path.join(OUT_DIR, f"{name}_{case}.trace.safetensors"), tensors,
                          {"model": name + ".model.safetensors", "interventions": json.dumps(meta_iv),
                           "family": model.c["stacks"], "case": f"{name}_{case}"})
    for name, model in models.items():
        model.train()  # dropout is 0: train() only lets autograd run through the same pass
        tensors, meta = training_reference(model)
        write_safetensors(os.path.join(OUT_DIR, name + ".training.safetensors"), tensors, meta)
        model.eval()
    # The app's fill-in-the-blank model: bert_post's layout with [MASK] in its vocabulary (model file only: its
    # numbers are the encoder-only pass the cases above check; the app's tests compare against that pass).
    mlm = build(MLM_MODEL, 1100)
    tensors, meta = model_file(mlm)
    write_safetensors(os.path.join(OUT_DIR, MLM_MODEL["name"] + ".model.safetensors"), tensors, meta)
    print("wrote", len(os.listdir(OUT_DIR)), "files to", os.path.normpath(OUT_DIR))


if __name__ == "__main__":
    main()
