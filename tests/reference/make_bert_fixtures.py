#!/usr/bin/python3
"""Writes the BERT reference fixtures: random tiny BERT folders in the Hugging Face hub's layout and the traces
Stepformer must reproduce from them (tests/unit/test_bert.cpp).

    /usr/bin/python3 tests/reference/make_bert_fixtures.py

Development time only (Debian's python3-torch); the files are committed, so CI needs no torch. The transformers
library is not in Debian: BertReference below is written from Hugging Face's modeling_bert.py (BertForMaskedLM,
eager attention) class by class, under its names:
  BertEmbeddings          word_embeddings(ids) + position_embeddings(0..T-1) + token_type_embeddings(0), then
                          LayerNorm (eps layer_norm_eps)
  BertSelfAttention       query, key, value (nn.Linear); heads (B, H, T, D); scores q k^T / sqrt(D) + the extended
                          attention mask ((1 - mask) * finfo.min); softmax; head_mask multiplied into the
                          probabilities; the heads' outputs concatenated
  BertSelfOutput          LayerNorm(dense(context) + input)                      (post-norm)
  BertIntermediate        gelu(dense(h)): the exact erf GELU ("gelu")
  BertOutput              LayerNorm(dense(intermediate) + h)
  BertLMPredictionHead    transform: LayerNorm(gelu(dense(h))); decoder: t E^T + bias (tied to word_embeddings)
Stepformer feeds token type 0 for every token (one text). The interventions Stepformer offers enter where HF's
forward takes them: head_mask (heads off), the attention mask (padding: [PAD] keys blocked; painted masks: a
per-head additive 4D mask that replaces the padding mask of its head), and the positions off, a switch in the
embeddings (BERT has no argument for it).

Every case is also recomputed step by step under Stepformer's trace names (docs/trace.md: the encoder layer, post-norm;
src.type_embed, src.embed_sum, src.embed_norm_*, head.dense, head.act, head.norm for BERT's parts), and ASSERTED equal
to the module's logits within 1e-5. Written to tests/fixtures/bert/:
  tiny-bert/            config.json, vocab.txt, tokenizer_config.json, model.safetensors under BertForMaskedLM's
                        names ("bert." + a tied cls.predictions.decoder.weight copy)
  tiny-bert-bare/       another random BERT (hidden_act gelu_new, 3 token types) saved without the "bert." prefix
                        and without the decoder weight, LayerNorm named gamma/beta as old checkpoints do
  tiny-bert-pretraining/ the tiny-bert weights as BertForPreTraining saves them: with bert.pooler.* and
                        cls.seq_relationship.* (not read)
  <case>.trace.safetensors   ids.src (F32) and every traced tensor; __metadata__: model (folder), interventions,
                        family, case
"""
import json
import math
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_forward_fixtures import write_safetensors  # noqa: E402

OUT_DIR = os.path.join(HERE, "..", "fixtures", "bert")
NEG = torch.finfo(torch.float32).min

# A WordPiece vocabulary in bert-base's layout: the special tokens first, words, then "##" continuations.
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
         "a man in an orange shirt two dogs play the snow . , is are on with girl boy red blue green "
         "street water runs jumps sits black white young old woman people group of at".split() +
         ["##s", "##ing", "##ed", "##er", "##ly", "##y", "##e", "##a", "##o", "##n", "##t", "##r", "##l",
          "##d", "##k", "##m", "##p"])
assert len(set(VOCAB)) == len(VOCAB)


def gelu(x):  # ACT2FN["gelu"]: the exact erf form
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_new(x):  # ACT2FN["gelu_new"]: the tanh approximation
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


# ---------------------------------------------------------------------------------------------------------
# BertForMaskedLM, from modeling_bert.py
class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, ids, positions_on):
        T = ids.size(1)
        token_type_ids = torch.zeros_like(ids)  # one text: every token of type 0
        embeddings = self.word_embeddings(ids) + self.token_type_embeddings(token_type_ids)
        if positions_on:
            embeddings = embeddings + self.position_embeddings(torch.arange(T)[None])
        return self.LayerNorm(embeddings)


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_attention_heads = c["num_attention_heads"]
        self.attention_head_size = c["hidden_size"] // c["num_attention_heads"]
        self.all_head_size = c["hidden_size"]
        self.query = nn.Linear(c["hidden_size"], self.all_head_size)
        self.key = nn.Linear(c["hidden_size"], self.all_head_size)
        self.value = nn.Linear(c["hidden_size"], self.all_head_size)

    def transpose_for_scores(self, x):  # (B, T, C) -> (B, H, T, D)
        x = x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size))
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden, attention_mask, head_mask):
        q = self.transpose_for_scores(self.query(hidden))
        k = self.transpose_for_scores(self.key(hidden))
        v = self.transpose_for_scores(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        scores = scores + attention_mask
        probs = nn.functional.softmax(scores, dim=-1)
        probs = probs * head_mask
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return context.view(context.size()[:-2] + (self.all_head_size,))


class BertSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, hidden, input_tensor):
        return self.LayerNorm(self.dense(hidden) + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c)

    def forward(self, hidden, attention_mask, head_mask):
        return self.output(self.self(hidden, attention_mask, head_mask), hidden)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.act = gelu if c["hidden_act"] == "gelu" else gelu_new

    def forward(self, hidden):
        return self.act(self.dense(hidden))


class BertOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["intermediate_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, hidden, input_tensor):
        return self.LayerNorm(self.dense(hidden) + input_tensor)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, hidden, attention_mask, head_mask):
        attention_output = self.attention(hidden, attention_mask, head_mask)
        return self.output(self.intermediate(attention_output), attention_output)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.transform_act_fn = gelu if c["hidden_act"] == "gelu" else gelu_new
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, hidden):
        return self.LayerNorm(self.transform_act_fn(self.dense(hidden)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transform = BertPredictionHeadTransform(c)
        self.bias = nn.Parameter(torch.randn(c["vocab_size"]) * 0.1)  # (its decoder is tied: not a parameter here)


class BertOnlyMLMHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.predictions = BertLMPredictionHead(c)


class BertReference(nn.Module):
    """BertForMaskedLM: bert (embeddings, encoder; no pooler) and cls.predictions, the decoder tied to the words."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.bert = BertModel(c)
        self.cls = BertOnlyMLMHead(c)
        with torch.no_grad():  # norms away from 1 and 0, linear layers larger than PyTorch's init: errors show
            for name, p in self.named_parameters():
                if "LayerNorm" in name:
                    p.add_(0.1 * torch.randn_like(p))
                elif "dense" in name or "query" in name or "key" in name or "value" in name:
                    p.mul_(2.0)
            self.bert.embeddings.word_embeddings.weight.mul_(0.5)

    def forward(self, ids, iv):
        """ids (1, T) -> logits (1, T, V), with the interventions as HF's forward takes them."""
        c = self.c
        T, H, L = ids.size(1), c["num_attention_heads"], c["num_hidden_layers"]
        hidden = self.bert.embeddings(ids, iv.get("positional_encoding", True))
        # get_extended_attention_mask: (1 - mask) * finfo.min over the keys, for every head
        keep = (ids != c["pad_token_id"]) if iv.get("padding_mask", True) else torch.ones_like(ids, dtype=torch.bool)
        base = ((1.0 - keep.float()) * NEG)[:, None, None, :].expand(1, H, T, T)
        head_mask = torch.ones(L, H)
        for ref in iv.get("heads_off", []):
            _, l, h = ref.split(".")
            head_mask[int(l), int(h)] = 0.0
        for l, layer in enumerate(self.bert.encoder.layer):
            mask = base.clone()
            for m in iv.get("custom_masks", []):  # a painted head's mask replaces its padding mask
                _, ml, mh = m["where"].split(".")
                if int(ml) == l:
                    mask[0, int(mh)] = torch.where(torch.tensor(m["blocked"], dtype=torch.bool), torch.tensor(NEG),
                                                   torch.tensor(0.0))
            hidden = layer(hidden, mask, head_mask[l].view(1, H, 1, 1))
        t = self.cls.predictions.transform(hidden)
        return F.linear(t, self.bert.embeddings.word_embeddings.weight) + self.cls.predictions.bias


# ---------------------------------------------------------------------------------------------------------
# The recorded pass under Stepformer's trace names
def recorded_pass(model, ids, iv):
    c = model.c
    T, C, H = len(ids), c["hidden_size"], c["num_attention_heads"]
    D = C // H
    act = gelu if c["hidden_act"] == "gelu" else gelu_new
    tr = {}
    heads_off = {tuple(int(x) for x in r.split(".")[1:]) for r in iv.get("heads_off", [])}
    painted = {tuple(int(x) for x in m["where"].split(".")[1:]): torch.tensor(m["blocked"], dtype=torch.bool)
               for m in iv.get("custom_masks", [])}
    pad_keys = (ids == c["pad_token_id"]) if iv.get("padding_mask", True) else torch.zeros(T, dtype=torch.bool)
    blocked = pad_keys[None, :].expand(T, T)

    def norm(x, ln, name, keep_output=True):
        out = ln(x)
        if keep_output:
            tr[name] = out
        tr[name + "_mean"] = x.mean(-1)
        tr[name + "_std"] = torch.sqrt(x.var(-1, unbiased=False) + ln.eps)
        return out

    e = model.bert.embeddings
    tok = e.word_embeddings.weight[ids]
    pos = e.position_embeddings.weight[:T] if iv.get("positional_encoding", True) else torch.zeros(T, C)
    typ = e.token_type_embeddings.weight[0].expand(T, C)
    s = tok + pos + typ
    tr["src.tok_embed"], tr["src.pos"], tr["src.type_embed"], tr["src.embed_sum"] = tok, pos, typ, s
    x = norm(s, e.LayerNorm, "src.embed_norm", keep_output=False)
    tr["enc.in"] = x
    for l, layer in enumerate(model.bert.encoder.layer):
        p = f"enc.{l}"
        a = layer.attention.self
        q, k, v = [lin(x).view(T, H, D).transpose(0, 1) for lin in (a.query, a.key, a.value)]
        scores = q @ k.transpose(1, 2) / math.sqrt(D)
        mask = blocked[None].expand(H, T, T).clone()
        for h in range(H):
            if (l, h) in painted:
                mask[h] = painted[(l, h)]
        probs = torch.softmax(scores.masked_fill(mask, float("-inf")), -1)
        head_out = probs @ v
        for h in range(H):
            if (l, h) in heads_off:
                head_out[h] = 0.0
        heads_out = head_out.transpose(0, 1).reshape(T, C)
        attn_out = layer.attention.output.dense(heads_out)
        for n, t in (("q", q), ("k", k), ("v", v), ("scores", scores), ("mask", mask.float()), ("probs", probs),
                     ("head_out", head_out), ("heads_out", heads_out), ("attn_out", attn_out)):
            tr[f"{p}.self_attn.{n}"] = t
        r1 = x + attn_out
        tr[p + ".residual1"] = r1
        n1 = norm(r1, layer.attention.output.LayerNorm, p + ".norm1")
        pre = layer.intermediate.dense(n1)
        hidden = act(pre)
        out = layer.output.dense(hidden)
        tr[p + ".ffn_hidden_pre"], tr[p + ".ffn_hidden"], tr[p + ".ffn_out"] = pre, hidden, out
        r2 = n1 + out
        tr[p + ".residual2"] = r2
        x = norm(r2, layer.output.LayerNorm, p + ".norm2")
        tr[p + ".out"] = x
    tr["enc.out"] = x
    tf = model.cls.predictions.transform
    dense = tf.dense(x)
    a = act(dense)
    tr["head.dense"], tr["head.act"] = dense, a
    t = norm(a, tf.LayerNorm, "head.norm")
    tr["logits"] = F.linear(t, e.word_embeddings.weight) + model.cls.predictions.bias
    tr["probs"] = torch.softmax(tr["logits"], -1)
    return tr


# ---------------------------------------------------------------------------------------------------------
# Folders in the hub's layout
def hub_config(c):
    return {"architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "classifier_dropout": None,
            "gradient_checkpointing": False, "hidden_act": c["hidden_act"], "hidden_dropout_prob": 0.1,
            "hidden_size": c["hidden_size"], "initializer_range": 0.02, "intermediate_size": c["intermediate_size"],
            "layer_norm_eps": c["layer_norm_eps"], "max_position_embeddings": c["max_position_embeddings"],
            "model_type": "bert", "num_attention_heads": c["num_attention_heads"],
            "num_hidden_layers": c["num_hidden_layers"], "pad_token_id": c["pad_token_id"],
            "position_embedding_type": "absolute", "transformers_version": "4.46.0",
            "type_vocab_size": c["type_vocab_size"], "use_cache": True, "vocab_size": c["vocab_size"],
            "_name_or_path": c["name_or_path"]}


def hub_tensors(model, prefix, decoder_copy, old_norm_names, pretraining):
    out = {}
    for name, t in model.named_parameters():
        if old_norm_names and "LayerNorm." in name:
            name = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        if name.startswith("bert."):
            name = prefix + name[len("bert."):]
        out[name] = t.detach().numpy().astype(np.float32)
    if decoder_copy:
        out["cls.predictions.decoder.weight"] = model.bert.embeddings.word_embeddings.weight.detach().numpy().copy()
    if pretraining:  # BertForPreTraining's pooler and next-sentence head: known, not read
        g = torch.Generator().manual_seed(99)
        C = model.c["hidden_size"]
        out[prefix + "pooler.dense.weight"] = torch.randn(C, C, generator=g).numpy()
        out[prefix + "pooler.dense.bias"] = torch.randn(C, generator=g).numpy()
        out["cls.seq_relationship.weight"] = torch.randn(2, C, generator=g).numpy()
        out["cls.seq_relationship.bias"] = torch.randn(2, generator=g).numpy()
    return out


def write_folder(name, model, prefix="bert.", decoder_copy=True, old_norm_names=False, pretraining=False,
                 tokenizer_config=None):
    folder = os.path.join(OUT_DIR, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(hub_config(model.c), f, indent=2, sort_keys=True)
    with open(os.path.join(folder, "vocab.txt"), "w") as f:
        f.write("".join(piece + "\n" for piece in VOCAB))
    if tokenizer_config is not None:
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump(tokenizer_config, f, indent=2, sort_keys=True)
    write_safetensors(os.path.join(folder, "model.safetensors"),
                      hub_tensors(model, prefix, decoder_copy, old_norm_names, pretraining), {"format": "pt"})


def build(seed, **extra):
    torch.manual_seed(seed)
    c = dict(hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=64,
             max_position_embeddings=24, type_vocab_size=2, layer_norm_eps=1e-12, hidden_act="gelu",
             vocab_size=len(VOCAB), pad_token_id=0, name_or_path="stepformer-tests/tiny-bert")
    c.update(extra)
    return BertReference(c).eval()


def write_case(case, folder, model, ids, iv):
    with torch.no_grad():
        tr = recorded_pass(model, torch.tensor(ids), iv)
        module = model(torch.tensor([ids]), iv)[0]
    diff = float((module - tr["logits"]).abs().max())
    assert diff < 1e-5, (case, diff)
    tensors = {"ids.src": np.array(ids, dtype=np.float32)}
    tensors.update({n: t.detach().contiguous().numpy().astype(np.float32) for n, t in tr.items()})
    meta = {"model": folder, "interventions": json.dumps(iv), "family": "bert", "case": case}
    write_safetensors(os.path.join(OUT_DIR, case + ".trace.safetensors"), tensors, meta)
    print(f"  {case}: {len(tr)} tensors, module vs recorded {diff:.2e}")


def ids_of(words):
    return [VOCAB.index(w) for w in words.split()]


def main():
    torch.set_num_threads(1)
    if os.path.isdir(OUT_DIR):
        shutil.rmtree(OUT_DIR)
    os.makedirs(OUT_DIR)

    tiny = build(52)
    bare = build(53, hidden_act="gelu_new", type_vocab_size=3, layer_norm_eps=1e-5, name_or_path="tiny-bert-bare")
    write_folder("tiny-bert", tiny, tokenizer_config={"do_lower_case": True, "strip_accents": None,
                                                      "tokenize_chinese_chars": True, "mask_token": "[MASK]",
                                                      "model_max_length": 24, "tokenizer_class": "BertTokenizer"})
    write_folder("tiny-bert-bare", bare, prefix="", decoder_copy=False, old_norm_names=True,
                 tokenizer_config={"do_lower_case": False, "strip_accents": False, "tokenize_chinese_chars": False})
    write_folder("tiny-bert-pretraining", tiny, pretraining=True)

    # [CLS] a man in an orange [MASK] . [SEP]
    ids = ids_of("[CLS] a man in an orange [MASK] . [SEP]")
    T = len(ids)
    # A painted mask: head 1 of layer 0 sees only [CLS] and itself (a row never all blocked).
    painted = [[0.0 if j in (0, i) else 1.0 for j in range(T)] for i in range(T)]
    padded = ids_of("[CLS] two dogs play in the [MASK] [SEP] [PAD] [PAD]")
    cases = [
        ("bert_plain", "tiny-bert", tiny, ids, {}),
        ("bert_head_off", "tiny-bert", tiny, ids, {"heads_off": ["enc.1.2"]}),
        ("bert_no_positions", "tiny-bert", tiny, ids, {"positional_encoding": False}),
        ("bert_painted", "tiny-bert", tiny, ids, {"custom_masks": [{"where": "enc.0.1", "blocked": painted}]}),
        ("bert_padded", "tiny-bert", tiny, padded, {}),
        ("bert_padding_off", "tiny-bert", tiny, padded, {"padding_mask": False}),
        ("bert_all_off", "tiny-bert", tiny, ids, {"heads_off": ["enc.0.0", "enc.1.3"], "positional_encoding": False}),
        ("bert_bare_plain", "tiny-bert-bare", bare, ids_of("[CLS] a girl in a red shirt [MASK] [MASK] [SEP]"), {}),
        ("bert_pretraining_plain", "tiny-bert-pretraining", tiny, ids, {}),
    ]
    for case, folder, model, case_ids, iv in cases:
        write_case(case, folder, model, case_ids, iv)
    print("wrote", sorted(os.listdir(OUT_DIR)))


if __name__ == "__main__":
    main()
