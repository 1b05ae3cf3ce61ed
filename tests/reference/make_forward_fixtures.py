#!/usr/bin/python3
"""Writes the PyTorch reference fixtures of the forward pass: tests/fixtures/forward/*.safetensors.

Development time only (Debian's python3-torch, run with /usr/bin/python3); the files it writes are committed
and read by tests/unit/test_forward_pytorch.cpp, so CI needs no torch.

For each case it builds a small random model of one of the two families of tests/reference/families.py
  - "pytorch-tutorial": the PyTorch translation tutorial's Seq2SeqTransformer (nn.Transformer, embeddings scaled
    by sqrt(C), the tutorial's sinusoidal PositionalEncoding, a generator Linear), post-norm or norm_first,
    ReLU or GELU;
  - "seq2seq-tutorial": the pytorch-seq2seq "Attention Is All You Need" model (fc_q/fc_k/fc_v/fc_o attention,
    learned positions, post-norm, no final norms, masks via masked_fill(-1e10)),
recomputes the forward pass step by step with torch functional ops, naming every intermediate as the C++
trace does (docs/trace.md), ASSERTS that the stepwise logits equal the torch module's own output, and writes
  <name>.model.safetensors   a Stepformer model file: the module's parameters under the family's own names
                             (what load_model reads), config, vocabularies
  <case>.trace.safetensors   ids.src, ids.tgt (as F32) and every expected intermediate under its trace name;
                             __metadata__: model (the model file), interventions (JSON), family, case
The padded cases run sentences through the torch module as one padded batch (key padding masks) and compare
each row with the stepwise pass of that sentence alone (one trace file per sentence, one shared model file).
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import families  # noqa: E402  (the torch modules of both families, shared with make_model_fixtures.py)

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "forward")
PAD, BOS, EOS, UNK = 1, 2, 3, 0


# ---------------------------------------------------------------------------------------------------------
# safetensors writer (8-byte little-endian header length, JSON header, raw little-endian data)
def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr)
        dtype = {np.dtype("float32"): "F32", np.dtype("int64"): "I64"}[arr.dtype]
        data = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * ((8 - len(head) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------------------------------------------------
# The two families: the torch modules of tests/reference/families.py (the tutorials' own classes and names).
def tutorial_positional_table(C, maxlen):
    """The pytorch-tutorial's sinusoidal table (float32 arithmetic, as families.PositionalEncoding)."""
    return families.PositionalEncoding(C, maxlen=maxlen).pos_embedding[:, 0, :]


def module_logits(family, model, src, tgt, causal):
    """The torch module's own forward on a (padded) batch."""
    if family == "pytorch-tutorial":
        t = tgt.size(1)
        tgt_mask = model.transformer.generate_square_subsequent_mask(t) if causal else None
        return model(src, tgt, None, tgt_mask, src == PAD, tgt == PAD, src == PAD)
    assert causal, "the seq2seq tutorial always applies its causal mask"
    out = model(src, tgt)
    return out[0] if isinstance(out, tuple) else out  # the tutorial's decoder returns (output, attention)


def native_weights(family, model):
    """The module's parameters under the native names of the stepwise reference (Q, K, V separate)."""
    sd = {k: v.detach().clone() for k, v in model.named_parameters()}
    w = {}

    def lin(dst, src):
        w[dst + ".weight"], w[dst + ".bias"] = sd[src + ".weight"], sd[src + ".bias"]

    if family == "pytorch-tutorial":
        C = model.transformer.d_model

        def mha(dst, src):
            for i, n in enumerate("qkv"):
                w[f"{dst}.{n}.weight"] = sd[src + ".in_proj_weight"][i * C:(i + 1) * C]
                w[f"{dst}.{n}.bias"] = sd[src + ".in_proj_bias"][i * C:(i + 1) * C]
            lin(dst + ".out", src + ".out_proj")

        w["src_embedding"] = sd["src_tok_emb.embedding.weight"]
        w["tgt_embedding"] = sd["tgt_tok_emb.embedding.weight"]
        for l in range(len(model.transformer.encoder.layers)):
            p = f"transformer.encoder.layers.{l}"
            mha(f"enc.{l}.self_attn", p + ".self_attn")
            lin(f"enc.{l}.self_attn_norm", p + ".norm1")
            lin(f"enc.{l}.ffn.fc1", p + ".linear1")
            lin(f"enc.{l}.ffn.fc2", p + ".linear2")
            lin(f"enc.{l}.ffn_norm", p + ".norm2")
        for l in range(len(model.transformer.decoder.layers)):
            p = f"transformer.decoder.layers.{l}"
            mha(f"dec.{l}.self_attn", p + ".self_attn")
            lin(f"dec.{l}.self_attn_norm", p + ".norm1")
            mha(f"dec.{l}.cross_attn", p + ".multihead_attn")
            lin(f"dec.{l}.cross_attn_norm", p + ".norm2")
            lin(f"dec.{l}.ffn.fc1", p + ".linear1")
            lin(f"dec.{l}.ffn.fc2", p + ".linear2")
            lin(f"dec.{l}.ffn_norm", p + ".norm3")
        lin("enc_norm", "transformer.encoder.norm")
        lin("dec_norm", "transformer.decoder.norm")
        lin("generator", "generator")
        return w

    def mha(dst, src):
        for n, m in (("q", "fc_q"), ("k", "fc_k"), ("v", "fc_v"), ("out", "fc_o")):
            lin(f"{dst}.{n}", f"{src}.{m}")

    w["src_embedding"], w["src_positions"] = sd["encoder.tok_embedding.weight"], sd["encoder.pos_embedding.weight"]
    w["tgt_embedding"], w["tgt_positions"] = sd["decoder.tok_embedding.weight"], sd["decoder.pos_embedding.weight"]
    for l in range(len(model.encoder.layers)):
        p = f"encoder.layers.{l}"
        mha(f"enc.{l}.self_attn", p + ".self_attention")
        lin(f"enc.{l}.self_attn_norm", p + ".self_attn_layer_norm")
        lin(f"enc.{l}.ffn.fc1", p + ".positionwise_feedforward.fc_1")
        lin(f"enc.{l}.ffn.fc2", p + ".positionwise_feedforward.fc_2")
        lin(f"enc.{l}.ffn_norm", p + ".ff_layer_norm")
    for l in range(len(model.decoder.layers)):
        p = f"decoder.layers.{l}"
        mha(f"dec.{l}.self_attn", p + ".self_attention")
        lin(f"dec.{l}.self_attn_norm", p + ".self_attn_layer_norm")
        mha(f"dec.{l}.cross_attn", p + ".encoder_attention")
        lin(f"dec.{l}.cross_attn_norm", p + ".enc_attn_layer_norm")
        lin(f"dec.{l}.ffn.fc1", p + ".positionwise_feedforward.fc_1")
        lin(f"dec.{l}.ffn.fc2", p + ".positionwise_feedforward.fc_2")
        lin(f"dec.{l}.ffn_norm", p + ".ff_layer_norm")
    lin("generator", "decoder.fc_out")
    return w


# ---------------------------------------------------------------------------------------------------------
# The stepwise reference: one sentence pair, every intermediate under its trace name.
def stepwise(c, w, src, tgt, iv):
    C, H = c["d_model"], c["n_heads"]
    D = C // H
    eps = c["layer_norm_eps"]
    pre = c["norm_placement"] == "pre"
    act = F.gelu if c["activation"] == "gelu" else F.relu
    tr = {}

    def linear(x, p):
        return F.linear(x, w[p + ".weight"], w[p + ".bias"])

    def layer_norm(x, p, name):
        mean = x.mean(-1)
        std = torch.sqrt(x.var(-1, unbiased=False) + eps)
        out = F.layer_norm(x, (C,), w[p + ".weight"], w[p + ".bias"], eps)
        tr[name], tr[name + "_mean"], tr[name + "_std"] = out, mean, std
        return out

    def heads(x):  # (N, C) -> (H, N, D)
        return x.view(x.shape[0], H, D).permute(1, 0, 2)

    def attention(xq, xkv, p, name, blocked):  # blocked (Tq, Tk) bool
        q, k, v = heads(linear(xq, p + ".q")), heads(linear(xkv, p + ".k")), heads(linear(xkv, p + ".v"))
        scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(D)
        mask = blocked.unsqueeze(0).expand(H, -1, -1)
        assert not mask.all(-1).any(), "a fully masked row: PyTorch gives NaN there"
        probs = torch.softmax(scores.masked_fill(mask, float("-inf")), -1)
        head_out = torch.matmul(probs, v)
        heads_out = head_out.permute(1, 0, 2).reshape(xq.shape[0], C)
        attn_out = linear(heads_out, p + ".out")
        for n, t in (("q", q), ("k", k), ("v", v), ("scores", scores), ("mask", mask.float()), ("probs", probs),
                     ("head_out", head_out), ("heads_out", heads_out), ("attn_out", attn_out)):
            tr[f"{name}.{n}"] = t
        return attn_out

    def ffn(x, p, name):
        hp = linear(x, p + ".fc1")
        h = act(hp)
        out = linear(h, p + ".fc2")
        tr[name + ".ffn_hidden_pre"], tr[name + ".ffn_hidden"], tr[name + ".ffn_out"] = hp, h, out
        return out

    def embed(ids, side, name):
        table = w[side + "_embedding"]
        scale = math.sqrt(C) if c["embedding_scale"] == "sqrt_d_model" else 1.0
        if c["positional_encoding"] == "learned":
            tok = table[ids] * torch.sqrt(torch.FloatTensor([C])) if scale != 1.0 else table[ids]
            pos = w[side + "_positions"][: len(ids)]
        else:
            tok = table[ids] * scale
            pos = tutorial_positional_table(C, c["max_positions"])[: len(ids)]
        if not iv.get("positional_encoding", True):
            pos = torch.zeros_like(pos)
        tr[name + ".tok_embed"], tr[name + ".pos"] = tok, pos
        return tok + pos

    S, T = len(src), len(tgt)
    pad_src = (src == PAD) if iv.get("padding_mask", True) else torch.zeros(S, dtype=torch.bool)
    pad_tgt = (tgt == PAD) if iv.get("padding_mask", True) else torch.zeros(T, dtype=torch.bool)
    enc_mask = pad_src.unsqueeze(0).expand(S, S)
    cross_mask = pad_src.unsqueeze(0).expand(T, S)
    dec_mask = pad_tgt.unsqueeze(0).expand(T, T)
    if iv.get("causal_mask", True):
        dec_mask = dec_mask | torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)

    x = embed(src, "src", "src")
    tr["enc.in"] = x
    for l in range(c["n_encoder_layers"]):
        p = f"enc.{l}"
        if not pre:
            r1 = x + attention(x, x, p + ".self_attn", p + ".self_attn", enc_mask)
            n1 = layer_norm(r1, p + ".self_attn_norm", p + ".norm1")
            r2 = n1 + ffn(n1, p + ".ffn", p)
            x = layer_norm(r2, p + ".ffn_norm", p + ".norm2")
        else:
            n1 = layer_norm(x, p + ".self_attn_norm", p + ".norm1")
            r1 = x + attention(n1, n1, p + ".self_attn", p + ".self_attn", enc_mask)
            n2 = layer_norm(r1, p + ".ffn_norm", p + ".norm2")
            r2 = r1 + ffn(n2, p + ".ffn", p)
            x = r2
        tr[p + ".residual1"], tr[p + ".residual2"], tr[p + ".out"] = r1, r2, x
    if c["encoder_final_norm"]:
        x = layer_norm(x, "enc_norm", "enc.final_norm")
        del tr["enc.final_norm"]
    tr["enc.out"] = mem = x

    y = embed(tgt, "tgt", "tgt")
    tr["dec.in"] = y
    for l in range(c["n_decoder_layers"]):
        p = f"dec.{l}"
        if not pre:
            r1 = y + attention(y, y, p + ".self_attn", p + ".self_attn", dec_mask)
            n1 = layer_norm(r1, p + ".self_attn_norm", p + ".norm1")
            r2 = n1 + attention(n1, mem, p + ".cross_attn", p + ".cross_attn", cross_mask)
            n2 = layer_norm(r2, p + ".cross_attn_norm", p + ".norm2")
            r3 = n2 + ffn(n2, p + ".ffn", p)
            y = layer_norm(r3, p + ".ffn_norm", p + ".norm3")
        else:
            n1 = layer_norm(y, p + ".self_attn_norm", p + ".norm1")
            r1 = y + attention(n1, n1, p + ".self_attn", p + ".self_attn", dec_mask)
            n2 = layer_norm(r1, p + ".cross_attn_norm", p + ".norm2")
            r2 = r1 + attention(n2, mem, p + ".cross_attn", p + ".cross_attn", cross_mask)
            n3 = layer_norm(r2, p + ".ffn_norm", p + ".norm3")
            r3 = r2 + ffn(n3, p + ".ffn", p)
            y = r3
        tr[p + ".residual1"], tr[p + ".residual2"], tr[p + ".residual3"], tr[p + ".out"] = r1, r2, r3, y
    if c["decoder_final_norm"]:
        y = layer_norm(y, "dec_norm", "dec.final_norm")
        del tr["dec.final_norm"]
    tr["dec.out"] = y
    tr["logits"] = linear(y, "generator")
    tr["probs"] = torch.softmax(tr["logits"], -1)
    return tr


# ---------------------------------------------------------------------------------------------------------
def base_config(**kw):
    c = dict(d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=2, d_ff=32, src_vocab_size=23,
             tgt_vocab_size=29, max_positions=64, positional_encoding="sinusoidal", embedding_scale="sqrt_d_model",
             norm_placement="post", encoder_final_norm=True, decoder_final_norm=True, activation="relu",
             layer_norm_eps=1e-5, bias=True, tie_output_embedding=False, share_embeddings=False,
             pad_id=PAD, bos_id=BOS, eos_id=EOS, unk_id=UNK)
    c.update(kw)
    return c


def randomise(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:  # LayerNorm: keep near 1 / 0 but not exactly
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))


def sentence(rng, n, vocab, bos=False, pad_to=None):
    ids = [BOS] if bos else []
    ids += [int(x) for x in rng.integers(4, vocab, size=n - len(ids))]
    if pad_to:
        ids += [PAD] * (pad_to - len(ids))
    return torch.tensor(ids, dtype=torch.long)


def vocabulary(n):
    return ["<unk>", "<pad>", "<bos>", "<eos>"] + [f"w{i}" for i in range(4, n)]


def write_model_file(name, family, c, model):
    """A Stepformer model file (docs/model-files.md): the module's parameters under the family's own names."""
    tensors = {k: v.detach().numpy().astype(np.float32) for k, v in model.named_parameters()}
    meta = {"format": "stepformer-model", "format_version": "1", "family": family, "config": json.dumps(c),
            "src_vocab": json.dumps(vocabulary(c["src_vocab_size"])),
            "tgt_vocab": json.dumps(vocabulary(c["tgt_vocab_size"])),
            "provenance": json.dumps({"written_by": "tests/reference/make_forward_fixtures.py",
                                      "weights": "random"})}
    path = os.path.join(OUT_DIR, name + ".model.safetensors")
    write_safetensors(path, tensors, meta)
    return os.path.getsize(path)


def write_trace_file(case, model_name, family, src, tgt, iv, tr):
    tensors = {"ids.src": src.numpy().astype(np.float32), "ids.tgt": tgt.numpy().astype(np.float32)}
    for k, v in tr.items():
        tensors[k] = v.detach().numpy().astype(np.float32)
    meta = {"model": model_name + ".model.safetensors", "interventions": json.dumps(iv), "family": family,
            "case": case}
    path = os.path.join(OUT_DIR, case + ".trace.safetensors")
    write_safetensors(path, tensors, meta)
    return os.path.getsize(path)


def build_case(name, family, c, seed, batch, iv=None):
    """batch: list of (src ids, tgt ids) of equal padded lengths; one trace fixture per sentence."""
    iv = iv or {}
    torch.manual_seed(seed)
    model = families.build(family, c)
    randomise(model, seed)
    model.eval()
    w = native_weights(family, model)
    src = torch.stack([s for s, _ in batch])
    tgt = torch.stack([t for _, t in batch])
    # Grad enabled on purpose: nn.Transformer's inference fast path (nested tensors) zeroes padded rows.
    module = module_logits(family, model, src, tgt, iv.get("causal_mask", True)).detach()
    sizes = write_model_file(name, family, c, model)
    for b, (s, t) in enumerate(batch):
        with torch.no_grad():
            tr = stepwise(c, w, s, t, iv)
        err = (tr["logits"] - module[b]).abs().max().item()
        assert err < 2e-5, f"{name}[{b}]: stepwise logits differ from the torch module by {err}"
        case = name if len(batch) == 1 else f"{name}_{b}"
        sizes += write_trace_file(case, name, family, s, t, iv, tr)
        print(f"{case:24s} module vs stepwise max |diff| {err:.2e}")
    return sizes


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for f in os.listdir(OUT_DIR):
        if f.endswith(".safetensors"):
            os.remove(os.path.join(OUT_DIR, f))
    rng = np.random.default_rng(1234)
    total = 0
    one = lambda c, S=6, T=5: [(sentence(rng, S, c["src_vocab_size"]), sentence(rng, T, c["tgt_vocab_size"], True))]
    c = base_config()
    total += build_case("pt_post", "pytorch-tutorial", c, 1, one(c))
    c = base_config(norm_placement="pre")
    total += build_case("pt_pre", "pytorch-tutorial", c, 2, one(c))
    c = base_config(activation="gelu", d_model=24, n_heads=3, n_encoder_layers=1, n_decoder_layers=1)
    total += build_case("pt_gelu", "pytorch-tutorial", c, 3, one(c, 7, 6))
    c = base_config(n_encoder_layers=1, n_decoder_layers=1)
    total += build_case("pt_post_nocausal", "pytorch-tutorial", c, 4, one(c), {"causal_mask": False})
    c = base_config(positional_encoding="learned", encoder_final_norm=False, decoder_final_norm=False,
                    max_positions=10)
    total += build_case("s2s_learned", "seq2seq-tutorial", c, 5, one(c, 7, 6))
    # A padded batch of three sentences (pads at the end of source and target).
    c = base_config(n_decoder_layers=1)
    lens = [(6, 5), (4, 3), (5, 2)]
    batch = [(sentence(rng, s, c["src_vocab_size"], pad_to=6), sentence(rng, t, c["tgt_vocab_size"], True, pad_to=5))
             for s, t in lens]
    total += build_case("pt_padded", "pytorch-tutorial", c, 6, batch)
    c = base_config(positional_encoding="learned", encoder_final_norm=False, decoder_final_norm=False,
                    max_positions=10, n_decoder_layers=1)
    batch = [(sentence(rng, s, c["src_vocab_size"], pad_to=6), sentence(rng, t, c["tgt_vocab_size"], True, pad_to=5))
             for s, t in lens[:2]]
    total += build_case("s2s_padded", "seq2seq-tutorial", c, 7, batch)
    print(f"total {total} bytes in {OUT_DIR}")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
