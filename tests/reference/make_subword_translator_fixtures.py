#!/usr/bin/python3
"""Writes tests/fixtures/subwords/translator.safetensors: the shipped subword translator's pieces and its first
greedy decoding steps, computed by python3-sentencepiece and PyTorch's own Transformer layers, for
tests/unit/test_subword_translator.cpp to hold the C++ tokenizer and decoder to.

Development time only (run with /usr/bin/python3 from the repository root; the file it writes is committed, so CI
needs no Python):

    /usr/bin/python3 tests/reference/make_subword_translator_fixtures.py [MODEL] [DATA_DIR]

MODEL (default assets/models/de-en-bpe.safetensors) is read independently of the C++ code: its safetensors header,
its weights (F16 -> float64), its config, and the SentencePiece model it carries (tensor tokenizer.source_spm),
which python3-sentencepiece loads. Written:

  metadata  "pieces": for test_2016_flickr.lc.norm.tok.{de,en} (DATA_DIR, default ../shared/data/multi30k/tok),
            the sha256 of every line split into pieces (each tokenized word split alone, as the model's
            words_bpe tokenizer splits it; a line's pieces joined by spaces, lines by newlines), the line count and
            the first 3 lines' pieces; "sentences": the German lines decoded below; "model_sha256" of MODEL
  tensors   "src_ids.K" (I64, S): <bos>, the pieces' ids, <eos>; "logprobs.K" (F32, steps, V; computed in float64): log-softmax of
            each greedy step's logits (row i: the pass over <bos> + the first i chosen pieces); "chosen.K" (I64,
            steps): the argmax of each row; for sentences K = 0, 1, 2
The reference model is torch.nn.TransformerEncoderLayer / TransformerDecoderLayer (post-norm, ReLU, as the
stepformer family's translator) in float64, the source and target sharing the one embedding matrix, scaled by
sqrt(d_model), the sinusoidal encoding interleaved (sin at even, cos at odd dimensions), the output layer tied to
the embedding with its own bias; every step recomputes the whole prefix (no cache).
"""
import hashlib
import json
import math
import os
import struct
import sys

import numpy as np
import sentencepiece as spm
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "subwords", "translator.safetensors")
STEPS = 5
SENTENCES = 3

torch.set_default_dtype(torch.float64)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    dtypes = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "U8": np.uint8, "I8": np.int8, "I64": np.int64}
    tensors = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        tensors[name] = np.frombuffer(data[b:e], dtype=dtypes[h["dtype"]]).reshape(h["shape"])
    return tensors, meta, hashlib.sha256(raw).hexdigest()


def write_safetensors(path, tensors, meta):
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr)
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[arr.dtype]
        blob = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = meta
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


class Translator(nn.Module):
    def __init__(self, c, w):
        super().__init__()
        C, H, F = c["d_model"], c["n_heads"], c["d_ff"]
        assert c["norm_placement"] == "post" and c["activation"] == "relu"
        assert c["share_embeddings"] and c["tie_output_embedding"] and c["positional_encoding"] == "sinusoidal"
        assert c["sinusoid_layout"] == "interleaved" and c["embedding_scale"] == "sqrt_d_model"
        assert not c["encoder_final_norm"] and not c["decoder_final_norm"]
        self.C = C
        t = {k: torch.from_numpy(v.astype(np.float64)) for k, v in w.items() if v.dtype.kind == "f"}
        eps = c["layer_norm_eps"]
        self.encoder = nn.ModuleList([nn.TransformerEncoderLayer(C, H, F, 0.0, batch_first=True, layer_norm_eps=eps)
                                      for _ in range(c["n_encoder_layers"])])
        self.decoder = nn.ModuleList([nn.TransformerDecoderLayer(C, H, F, 0.0, batch_first=True, layer_norm_eps=eps)
                                      for _ in range(c["n_decoder_layers"])])
        self.embedding = t["src_embedding.weight"]  # (V, C): both languages and the output layer
        self.bias = t["generator.bias"]
        pos = torch.arange(c["max_positions"]).unsqueeze(1)
        den = torch.exp(-torch.arange(0, C, 2) * math.log(10000.0) / C)
        self.pe = torch.zeros(c["max_positions"], C)
        self.pe[:, 0::2] = torch.sin(pos * den)
        self.pe[:, 1::2] = torch.cos(pos * den)

        def attention(m, p):
            m.in_proj_weight.data = torch.cat([t[p + n + ".weight"] for n in "qkv"])
            m.in_proj_bias.data = torch.cat([t[p + n + ".bias"] for n in "qkv"])
            m.out_proj.weight.data, m.out_proj.bias.data = t[p + "out.weight"], t[p + "out.bias"]

        def norm(m, p):
            m.weight.data, m.bias.data = t[p + ".weight"], t[p + ".bias"]

        def ffn(layer, p):
            layer.linear1.weight.data, layer.linear1.bias.data = t[p + "fc1.weight"], t[p + "fc1.bias"]
            layer.linear2.weight.data, layer.linear2.bias.data = t[p + "fc2.weight"], t[p + "fc2.bias"]

        for i, layer in enumerate(self.encoder):
            p = f"encoder.layers.{i}."
            attention(layer.self_attn, p + "self_attn.")
            norm(layer.norm1, p + "self_attn_norm")
            norm(layer.norm2, p + "ffn_norm")
            ffn(layer, p + "ffn.")
        for i, layer in enumerate(self.decoder):
            p = f"decoder.layers.{i}."
            attention(layer.self_attn, p + "self_attn.")
            attention(layer.multihead_attn, p + "cross_attn.")
            norm(layer.norm1, p + "self_attn_norm")
            norm(layer.norm2, p + "cross_attn_norm")
            norm(layer.norm3, p + "ffn_norm")
            ffn(layer, p + "ffn.")

    def embed(self, ids):  # (L) -> (1, L, C): E[id] sqrt(C) + PE
        return (self.embedding[torch.tensor(ids)] * math.sqrt(self.C) + self.pe[:len(ids)]).unsqueeze(0)

    @torch.no_grad()
    def greedy(self, src_ids, bos, steps):
        memory = self.embed(src_ids)
        for layer in self.encoder:
            memory = layer(memory)
        prefix, rows = [bos], []
        for _ in range(steps):
            T = len(prefix)
            x = self.embed(prefix)
            mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
            for layer in self.decoder:
                x = layer(x, memory, tgt_mask=mask)
            logits = x[0, -1] @ self.embedding.t() + self.bias  # (V)
            rows.append(torch.log_softmax(logits, -1).numpy())
            prefix.append(int(np.argmax(rows[-1])))
        return np.stack(rows), np.array(prefix[1:], dtype=np.int64)


def pieces_of_line(sp, line):
    return [p for word in line.split() for p in sp.encode(word, out_type=str)]


def main():
    model_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "assets", "models", "de-en-bpe.safetensors")
    data = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "..", "shared", "data", "multi30k", "tok")
    w, meta, model_sha = read_safetensors(model_path)
    config = json.loads(meta["config"])
    assert json.loads(meta["tokenizer"])["kind"] == "words_bpe"
    sp = spm.SentencePieceProcessor(model_proto=w["tokenizer.source_spm"].tobytes())
    out_meta = {"model": os.path.relpath(model_path, ROOT), "model_sha256": model_sha, "steps": str(STEPS)}
    pieces = {}
    for lang in ("de", "en"):
        with open(os.path.join(data, "test_2016_flickr.lc.norm.tok." + lang), encoding="utf-8") as f:
            lines = [l for l in f.read().split("\n") if l.strip()]
        split = [" ".join(pieces_of_line(sp, l)) for l in lines]
        pieces[lang] = {"sha256": hashlib.sha256("\n".join(split).encode("utf-8")).hexdigest(), "lines": len(lines),
                        "first": split[:3]}
    out_meta["pieces"] = json.dumps(pieces, ensure_ascii=False)
    with open(os.path.join(data, "test_2016_flickr.lc.norm.tok.de"), encoding="utf-8") as f:
        german = [l.strip() for l in f if l.strip() and "&" not in l][:SENTENCES]
    out_meta["sentences"] = json.dumps(german, ensure_ascii=False)
    model = Translator(config, w).eval()
    tensors = {}
    for k, line in enumerate(german):
        ids = [config["bos_id"]] + [sp.piece_to_id(p) for p in pieces_of_line(sp, line)] + [config["eos_id"]]
        logprobs, chosen = model.greedy(ids, config["bos_id"], STEPS)
        tensors[f"src_ids.{k}"] = np.array(ids, dtype=np.int64)
        tensors[f"logprobs.{k}"] = logprobs.astype(np.float32)  # (computed in float64)
        tensors[f"chosen.{k}"] = chosen
        print(line, "->", " ".join(sp.id_to_piece(int(i)) for i in chosen))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    write_safetensors(OUT, tensors, out_meta)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
