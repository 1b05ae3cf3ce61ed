#!/usr/bin/python3
"""Writes the PyTorch reference fixtures of the forward pass: tests/fixtures/forward/*.safetensors.

Development time only (Debian's python3-torch, run with /usr/bin/python3); the files it writes are committed
and read by tests/unit/test_forward_pytorch.cpp, so CI needs no torch.

For each case it builds a small random model of one of the two PyTorch families
  - "pytorch-tutorial": the PyTorch translation tutorial's Seq2SeqTransformer (nn.Transformer with token
    embeddings scaled by sqrt(C), the tutorial's sinusoidal PositionalEncoding, a generator Linear), post-norm
    or norm_first, ReLU or GELU;
  - "seq2seq-tutorial": the pytorch-seq2seq tutorial's "Attention Is All You Need" model (fc_q/fc_k/fc_v/fc_o
    attention, learned positions, post-norm, no final norms, masks via masked_fill(-1e10)),
then recomputes the forward pass step by step with torch functional ops, naming every intermediate as the C++
trace does (docs/trace.md), ASSERTS that the stepwise logits equal the torch module's output, and writes
  w.*          the weights in the native layout (Linear (out, in); Q, K, V separate)
  ids.src, ids.tgt   the token ids (I64)
  <trace name> every expected intermediate (F32)
  __metadata__: config (the native config JSON), interventions (JSON), family, case
The padded cases run three sentences through the torch module as one padded batch (key padding masks) and
compare each row with the stepwise pass of that sentence alone.
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
# The two families as their tutorials write them (dropout 0).
class TutorialPositionalEncoding(nn.Module):
    def __init__(self, emb_size, maxlen=64):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        self.register_buffer("pos_embedding", pos_embedding)

    def forward(self, x):  # (B, N, C)
        return x + self.pos_embedding[: x.size(1)].unsqueeze(0)


class PytorchTutorialModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.transformer = nn.Transformer(d_model=c["d_model"], nhead=c["n_heads"],
                                          num_encoder_layers=c["n_encoder_layers"],
                                          num_decoder_layers=c["n_decoder_layers"],
                                          dim_feedforward=c["d_ff"], dropout=0.0, activation=c["activation"],
                                          batch_first=True, norm_first=c["norm_placement"] == "pre")
        self.generator = nn.Linear(c["d_model"], c["tgt_vocab_size"])
        self.src_tok_emb = nn.Embedding(c["src_vocab_size"], c["d_model"])
        self.tgt_tok_emb = nn.Embedding(c["tgt_vocab_size"], c["d_model"])
        self.positional_encoding = TutorialPositionalEncoding(c["d_model"], c["max_positions"])

    def forward(self, src, tgt, causal=True):
        scale = math.sqrt(self.c["d_model"])
        src_emb = self.positional_encoding(self.src_tok_emb(src) * scale)
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(tgt) * scale)
        t = tgt.size(1)
        tgt_mask = self.transformer.generate_square_subsequent_mask(t) if causal else None
        outs = self.transformer(src_emb, tgt_emb, src_mask=None, tgt_mask=tgt_mask,
                                src_key_padding_mask=(src == PAD), tgt_key_padding_mask=(tgt == PAD),
                                memory_key_padding_mask=(src == PAD))
        return self.generator(outs)

    def native_weights(self):
        w = {}
        C = self.c["d_model"]
        lin = lambda prefix, m: w.update({prefix + ".weight": m.weight, prefix + ".bias": m.bias})
        ln = lambda prefix, m: w.update({prefix + ".weight": m.weight, prefix + ".bias": m.bias})

        def mha(prefix, m):
            for i, n in enumerate("qkv"):
                w[f"{prefix}.{n}.weight"] = m.in_proj_weight[i * C:(i + 1) * C]
                w[f"{prefix}.{n}.bias"] = m.in_proj_bias[i * C:(i + 1) * C]
            lin(prefix + ".out", m.out_proj)

        w["src_embedding"] = self.src_tok_emb.weight
        w["tgt_embedding"] = self.tgt_tok_emb.weight
        for l, layer in enumerate(self.transformer.encoder.layers):
            mha(f"enc.{l}.self_attn", layer.self_attn)
            ln(f"enc.{l}.self_attn_norm", layer.norm1)
            lin(f"enc.{l}.ffn.fc1", layer.linear1)
            lin(f"enc.{l}.ffn.fc2", layer.linear2)
            ln(f"enc.{l}.ffn_norm", layer.norm2)
        for l, layer in enumerate(self.transformer.decoder.layers):
            mha(f"dec.{l}.self_attn", layer.self_attn)
            ln(f"dec.{l}.self_attn_norm", layer.norm1)
            mha(f"dec.{l}.cross_attn", layer.multihead_attn)
            ln(f"dec.{l}.cross_attn_norm", layer.norm2)
            lin(f"dec.{l}.ffn.fc1", layer.linear1)
            lin(f"dec.{l}.ffn.fc2", layer.linear2)
            ln(f"dec.{l}.ffn_norm", layer.norm3)
        ln("enc_norm", self.transformer.encoder.norm)
        ln("dec_norm", self.transformer.decoder.norm)
        lin("generator", self.generator)
        return {k: v.detach().clone() for k, v in w.items()}


class S2SAttention(nn.Module):  # pytorch-seq2seq's MultiHeadAttentionLayer
    def __init__(self, hid_dim, n_heads):
        super().__init__()
        self.hid_dim, self.n_heads, self.head_dim = hid_dim, n_heads, hid_dim // n_heads
        self.fc_q, self.fc_k = nn.Linear(hid_dim, hid_dim), nn.Linear(hid_dim, hid_dim)
        self.fc_v, self.fc_o = nn.Linear(hid_dim, hid_dim), nn.Linear(hid_dim, hid_dim)
        self.scale = torch.sqrt(torch.FloatTensor([self.head_dim]))

    def forward(self, query, key, value, mask=None):
        b = query.shape[0]
        Q = self.fc_q(query).view(b, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        K = self.fc_k(key).view(b, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        V = self.fc_v(value).view(b, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / self.scale
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        attention = torch.softmax(energy, dim=-1)
        x = torch.matmul(attention, V).permute(0, 2, 1, 3).contiguous().view(b, -1, self.hid_dim)
        return self.fc_o(x)


class S2SFeedForward(nn.Module):
    def __init__(self, hid_dim, pf_dim):
        super().__init__()
        self.fc_1, self.fc_2 = nn.Linear(hid_dim, pf_dim), nn.Linear(pf_dim, hid_dim)

    def forward(self, x):
        return self.fc_2(torch.relu(self.fc_1(x)))


class S2SEncoderLayer(nn.Module):
    def __init__(self, hid, heads, pf):
        super().__init__()
        self.self_attn_layer_norm, self.ff_layer_norm = nn.LayerNorm(hid), nn.LayerNorm(hid)
        self.self_attention = S2SAttention(hid, heads)
        self.positionwise_feedforward = S2SFeedForward(hid, pf)

    def forward(self, src, src_mask):
        src = self.self_attn_layer_norm(src + self.self_attention(src, src, src, src_mask))
        return self.ff_layer_norm(src + self.positionwise_feedforward(src))


class S2SDecoderLayer(nn.Module):
    def __init__(self, hid, heads, pf):
        super().__init__()
        self.self_attn_layer_norm, self.enc_attn_layer_norm = nn.LayerNorm(hid), nn.LayerNorm(hid)
        self.ff_layer_norm = nn.LayerNorm(hid)
        self.self_attention, self.encoder_attention = S2SAttention(hid, heads), S2SAttention(hid, heads)
        self.positionwise_feedforward = S2SFeedForward(hid, pf)

    def forward(self, trg, enc_src, trg_mask, src_mask):
        trg = self.self_attn_layer_norm(trg + self.self_attention(trg, trg, trg, trg_mask))
        trg = self.enc_attn_layer_norm(trg + self.encoder_attention(trg, enc_src, enc_src, src_mask))
        return self.ff_layer_norm(trg + self.positionwise_feedforward(trg))


class Seq2SeqTutorialModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        C, H, Fd, P = c["d_model"], c["n_heads"], c["d_ff"], c["max_positions"]
        self.enc_tok, self.enc_pos = nn.Embedding(c["src_vocab_size"], C), nn.Embedding(P, C)
        self.dec_tok, self.dec_pos = nn.Embedding(c["tgt_vocab_size"], C), nn.Embedding(P, C)
        self.enc_layers = nn.ModuleList([S2SEncoderLayer(C, H, Fd) for _ in range(c["n_encoder_layers"])])
        self.dec_layers = nn.ModuleList([S2SDecoderLayer(C, H, Fd) for _ in range(c["n_decoder_layers"])])
        self.fc_out = nn.Linear(C, c["tgt_vocab_size"])
        self.scale = torch.sqrt(torch.FloatTensor([C]))

    def forward(self, src, trg, causal=True):
        src_mask = (src != PAD).unsqueeze(1).unsqueeze(2)
        t = trg.shape[1]
        trg_mask = (trg != PAD).unsqueeze(1).unsqueeze(2)
        if causal:
            trg_mask = trg_mask & torch.tril(torch.ones((t, t))).bool()
        pos = torch.arange(0, src.shape[1]).unsqueeze(0)
        x = self.enc_tok(src) * self.scale + self.enc_pos(pos)
        for layer in self.enc_layers:
            x = layer(x, src_mask)
        pos = torch.arange(0, t).unsqueeze(0)
        y = self.dec_tok(trg) * self.scale + self.dec_pos(pos)
        for layer in self.dec_layers:
            y = layer(y, x, trg_mask, src_mask)
        return self.fc_out(y)

    def native_weights(self):
        w = {}
        lin = lambda prefix, m: w.update({prefix + ".weight": m.weight, prefix + ".bias": m.bias})

        def mha(prefix, m):
            for n, mm in (("q", m.fc_q), ("k", m.fc_k), ("v", m.fc_v), ("out", m.fc_o)):
                lin(f"{prefix}.{n}", mm)

        w["src_embedding"], w["src_positions"] = self.enc_tok.weight, self.enc_pos.weight
        w["tgt_embedding"], w["tgt_positions"] = self.dec_tok.weight, self.dec_pos.weight
        for l, layer in enumerate(self.enc_layers):
            mha(f"enc.{l}.self_attn", layer.self_attention)
            lin(f"enc.{l}.self_attn_norm", layer.self_attn_layer_norm)
            lin(f"enc.{l}.ffn.fc1", layer.positionwise_feedforward.fc_1)
            lin(f"enc.{l}.ffn.fc2", layer.positionwise_feedforward.fc_2)
            lin(f"enc.{l}.ffn_norm", layer.ff_layer_norm)
        for l, layer in enumerate(self.dec_layers):
            mha(f"dec.{l}.self_attn", layer.self_attention)
            lin(f"dec.{l}.self_attn_norm", layer.self_attn_layer_norm)
            mha(f"dec.{l}.cross_attn", layer.encoder_attention)
            lin(f"dec.{l}.cross_attn_norm", layer.enc_attn_layer_norm)
            lin(f"dec.{l}.ffn.fc1", layer.positionwise_feedforward.fc_1)
            lin(f"dec.{l}.ffn.fc2", layer.positionwise_feedforward.fc_2)
            lin(f"dec.{l}.ffn_norm", layer.ff_layer_norm)
        lin("generator", self.fc_out)
        return {k: v.detach().clone() for k, v in w.items()}


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
            pos = TutorialPositionalEncoding(C, c["max_positions"]).pos_embedding[: len(ids)]
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


def write_case(name, family, c, w, src, tgt, iv, tr):
    tensors = {"w." + k: v.numpy().astype(np.float32) for k, v in w.items()}
    tensors["ids.src"] = src.numpy().astype(np.int64)
    tensors["ids.tgt"] = tgt.numpy().astype(np.int64)
    for k, v in tr.items():
        tensors[k] = v.detach().numpy().astype(np.float32)
    meta = {"config": json.dumps(c), "interventions": json.dumps(iv), "family": family, "case": name}
    path = os.path.join(OUT_DIR, name + ".safetensors")
    write_safetensors(path, tensors, meta)
    return os.path.getsize(path)


def build_case(name, family, c, seed, batch, iv=None):
    """batch: list of (src ids, tgt ids) of equal padded lengths; one fixture per sentence."""
    iv = iv or {}
    torch.manual_seed(seed)
    model = (PytorchTutorialModel if family == "pytorch-tutorial" else Seq2SeqTutorialModel)(c)
    randomise(model, seed)
    model.eval()
    w = model.native_weights()
    src = torch.stack([s for s, _ in batch])
    tgt = torch.stack([t for _, t in batch])
    # Grad enabled on purpose: nn.Transformer's inference fast path (nested tensors) zeroes padded rows.
    module_logits = model(src, tgt, causal=iv.get("causal_mask", True)).detach()
    sizes = 0
    for b, (s, t) in enumerate(batch):
        with torch.no_grad():
            tr = stepwise(c, w, s, t, iv)
        err = (tr["logits"] - module_logits[b]).abs().max().item()
        assert err < 2e-5, f"{name}[{b}]: stepwise logits differ from the torch module by {err}"
        case = name if len(batch) == 1 else f"{name}_{b}"
        sizes += write_case(case, family, c, w, s, t, iv, tr)
        print(f"{case:24s} module vs stepwise max |diff| {err:.2e}")
    return sizes


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
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
