#!/usr/bin/python3
"""Writes the GPT-2 reference fixtures: random GPT-2 folders in the Hugging Face hub's layout and the traces, tokens
and generations Stepformer must reproduce from them (tests/unit/test_gpt2.cpp).

    /usr/bin/python3 tests/reference/make_gpt2_fixtures.py

Development time only (Debian's python3-torch and python3-regex); the files are committed, so CI needs no torch.
The transformers library is not in Debian: GPT2Reference below is written from Hugging Face's modeling_gpt2.py
(GPT2LMHeadModel, eager attention) class by class, under its names:
  Conv1D                  y = x W + b with W stored [in, out] (nx, nf)
  GPT2Attention           c_attn (C -> 3C) split into query, key, value; heads (B, H, T, D); scores q k^T divided
                          by torch.full([], D ** 0.5); causal: torch.where(causal_mask, w, finfo.min); an additive
                          attention mask; softmax; head_mask multiplied into the probabilities; c_proj
  NewGELUActivation       0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))   ("gelu_new")
  GPT2MLP                 c_fc, act, c_proj
  GPT2Block               x + attn(ln_1(x)), then x + mlp(ln_2(x))
  GPT2Model               wte(ids) + wpe(positions), the blocks, ln_f
  GPT2LMHeadModel         lm_head = wte (tied), no bias
The interventions Stepformer offers enter it where HF's forward takes them: head_mask (heads off) and a per-head
additive 4D mask (painted masks); the causal mask off and the positions off are a switch each in _attn and in the
embedding (GPT-2 has no argument for them).

Every case is also recomputed step by step under Stepformer's trace names (docs/trace.md: the decoder-only layer's
blocks are self_attn + residual1 + norm1 and ffn + residual3 + norm3, pre-norm), and ASSERTED equal to the module's
logits. Written to tests/fixtures/gpt2/:
  tiny-gpt2/       config.json, model.safetensors (GPT2LMHeadModel's names: "transformer." + a tied lm_head.weight
                   copy), vocab.json, merges.txt (the byte-level BPE of tests/fixtures/gpt2_bpe), generation_config.json
  tiny-gpt2-bare/  another random GPT-2 (n_inner given, gelu_new) saved as GPT2Model names it: no prefix, no lm_head,
                   the old attn.bias / attn.masked_bias buffers
  <case>.trace.safetensors   ids.tgt (F32) and every traced tensor; __metadata__: model (folder), interventions,
                   family, case, prompt, and for the decoding cases greedy / beam / sample token ids
Generation: greedy is GenerationMixin's (argmax until eos or max_new_tokens); beam search is transformers'
_beam_search (length_penalty, early_stopping False) for a decoder-only prompt; sampling follows Stepformer's
documented rule (core/decode/sampling.h: softmax(logits / T), top-k, top-p, renormalised, one draw from
std::mt19937_64 seeded with `seed`, its top 53 bits as u in [0, 1), the first id whose cumulative probability
exceeds u): torch's own sampler draws from another generator, so its tokens cannot be compared; this one can.
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
from make_gpt2_bpe_fixtures import Reference as BpeReference  # noqa: E402

BPE_DIR = os.path.join(HERE, "..", "fixtures", "gpt2_bpe")
OUT_DIR = os.path.join(HERE, "..", "fixtures", "gpt2")
NEG = torch.finfo(torch.float32).min


# ---------------------------------------------------------------------------------------------------------
# GPT2LMHeadModel, from modeling_gpt2.py
class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.3)
        self.bias = nn.Parameter(torch.randn(nf) * 0.1)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.weight.size(-1),)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size_out)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_dim, self.num_heads = c["n_embd"], c["n_head"]
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)

    def _split_heads(self, t):  # (B, T, C) -> (B, H, T, D)
        return t.view(t.size()[:-1] + (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)

    def _attn(self, query, key, value, attention_mask, head_mask, causal):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        if causal:
            q_len, k_len = query.size(-2), key.size(-2)
            causal_mask = torch.tril(torch.ones(q_len, k_len, dtype=torch.bool)).view(1, 1, q_len, k_len)
            attn_weights = torch.where(causal_mask, attn_weights, torch.full([], NEG, dtype=attn_weights.dtype))
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        if head_mask is not None:
            attn_weights = attn_weights * head_mask
        return torch.matmul(attn_weights, value), attn_weights

    def forward(self, hidden, attention_mask, head_mask, causal):
        query, key, value = self.c_attn(hidden).split(self.split_size, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        out, _ = self._attn(query, key, value, attention_mask, head_mask, causal)
        out = out.permute(0, 2, 1, 3).contiguous()
        out = out.view(out.size()[:-2] + (self.embed_dim,))
        return self.c_proj(out)


class GPT2MLP(nn.Module):
    def __init__(self, inner, c):
        super().__init__()
        self.c_fc = Conv1D(inner, c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], inner)

    def forward(self, x):
        return self.c_proj(gelu_new(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        inner = c["n_inner"] if c.get("n_inner") is not None else 4 * c["n_embd"]
        self.ln_1 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.mlp = GPT2MLP(inner, c)

    def forward(self, x, attention_mask, head_mask, causal):
        x = x + self.attn(self.ln_1(x), attention_mask, head_mask, causal)
        return x + self.mlp(self.ln_2(x))


class GPT2Reference(nn.Module):
    """GPT2LMHeadModel: transformer (wte, wpe, h, ln_f) and the tied lm_head."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        with torch.no_grad():  # norms away from 1 and 0, so that a wrong one shows
            for name, p in self.named_parameters():
                if "ln_" in name:
                    p.add_(0.1 * torch.randn_like(p))

    def forward(self, ids, iv):
        """ids (1, T) -> logits (1, T, V), with the interventions as HF's forward takes them."""
        T = ids.size(1)
        positions = torch.arange(T)[None]
        hidden = self.wte(ids) + (self.wpe(positions) if iv.get("positional_encoding", True) else 0.0)
        H = self.c["n_head"]
        head_mask = torch.ones(self.c["n_layer"], H)
        for ref in iv.get("heads_off", []):
            _, l, h = ref.split(".")
            head_mask[int(l), int(h)] = 0.0
        painted = {}  # layer -> {head: additive (T, T)}
        for m in iv.get("custom_masks", []):
            _, l, h = m["where"].split(".")
            painted.setdefault(int(l), {})[int(h)] = torch.where(
                torch.tensor(m["blocked"], dtype=torch.bool), torch.tensor(NEG), torch.tensor(0.0))
        causal = iv.get("causal_mask", True)
        for l, block in enumerate(self.h):
            if l in painted:  # a painted head's mask replaces its causal mask (Stepformer's rule): one 4D mask
                base = torch.triu(torch.full((T, T), NEG), 1) if causal else torch.zeros(T, T)
                mask = base.expand(1, H, T, T).clone()
                for h, additive in painted[l].items():
                    mask[0, h] = additive
                hidden = block(hidden, mask, head_mask[l].view(1, H, 1, 1), False)
            else:
                hidden = block(hidden, None, head_mask[l].view(1, H, 1, 1), causal)
        hidden = self.ln_f(hidden)
        return F.linear(hidden, self.wte.weight)


# ---------------------------------------------------------------------------------------------------------
# The recorded pass under Stepformer's trace names
def recorded_pass(model, ids, iv):
    c = model.c
    T, C, H = len(ids), c["n_embd"], c["n_head"]
    D = C // H
    tr = {}
    heads_off = {tuple(int(x) for x in r.split(".")[1:]) for r in iv.get("heads_off", [])}
    painted = {tuple(int(x) for x in m["where"].split(".")[1:]): torch.tensor(m["blocked"], dtype=torch.bool)
               for m in iv.get("custom_masks", [])}
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if iv.get("causal_mask", True) else torch.zeros(T, T, dtype=torch.bool)

    def layer_norm(x, ln, name):
        tr[name] = out = ln(x)
        tr[name + "_mean"] = x.mean(-1)
        tr[name + "_std"] = torch.sqrt(x.var(-1, unbiased=False) + ln.eps)
        return out

    tok = model.wte.weight[ids]
    pos = model.wpe.weight[:T] if iv.get("positional_encoding", True) else torch.zeros(T, C)
    x = tok + pos
    tr["tgt.tok_embed"], tr["tgt.pos"], tr["dec.in"] = tok, pos, x
    for l, block in enumerate(model.h):
        p = f"dec.{l}"
        n1 = layer_norm(x, block.ln_1, p + ".norm1")
        w, b = block.attn.c_attn.weight, block.attn.c_attn.bias  # (C, 3C): columns q | k | v
        q, k, v = [(n1 @ w[:, i * C:(i + 1) * C] + b[i * C:(i + 1) * C]).view(T, H, D).transpose(0, 1) for i in range(3)]
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
        attn_out = heads_out @ block.attn.c_proj.weight + block.attn.c_proj.bias
        for n, t in (("q", q), ("k", k), ("v", v), ("scores", scores), ("mask", mask.float()), ("probs", probs),
                     ("head_out", head_out), ("heads_out", heads_out), ("attn_out", attn_out)):
            tr[f"{p}.self_attn.{n}"] = t
        r1 = x + attn_out
        tr[p + ".residual1"] = r1
        n3 = layer_norm(r1, block.ln_2, p + ".norm3")
        pre = n3 @ block.mlp.c_fc.weight + block.mlp.c_fc.bias
        hidden = gelu_new(pre)
        out = hidden @ block.mlp.c_proj.weight + block.mlp.c_proj.bias
        tr[p + ".ffn_hidden_pre"], tr[p + ".ffn_hidden"], tr[p + ".ffn_out"] = pre, hidden, out
        x = r1 + out
        tr[p + ".residual3"] = tr[p + ".out"] = x
    normed = layer_norm(x, model.ln_f, "dec.final_norm")
    del tr["dec.final_norm"]  # the trace keeps its mean and std; the normed rows are dec.out
    tr["dec.out"] = normed
    tr["logits"] = F.linear(normed, model.wte.weight)
    tr["probs"] = torch.softmax(tr["logits"], -1)
    return tr


# ---------------------------------------------------------------------------------------------------------
# Generation
def last_logits(model, seq):
    with torch.no_grad():
        return model(torch.tensor([seq]), {})[0, -1]


def greedy(model, prompt, eos, max_new):
    seq = list(prompt)
    while len(seq) - len(prompt) < max_new:
        token = int(torch.argmax(last_logits(model, seq)))
        seq.append(token)
        if token == eos:
            break
    return seq[len(prompt):]


def beam_search(model, prompt, eos, max_new, K, length_penalty):
    """transformers' _beam_search for one decoder-only prompt (early_stopping False), float32, in its order."""
    K2 = 2 * K
    top_k_mask = torch.arange(K2) < K
    prompt_len = cur_len = len(prompt)
    max_length = prompt_len + max_new
    running = [list(prompt) for _ in range(K)]
    running_scores = torch.zeros(K)
    running_scores[1:] = NEG
    fin_seqs, fin_scores = [None] * K, torch.full((K,), NEG)
    fin_done = torch.zeros(K, dtype=torch.bool)
    improvable = torch.tensor(True)
    while True:
        log_probs = F.log_softmax(torch.stack([last_logits(model, s) for s in running]), dim=-1)
        V = log_probs.shape[-1]
        acc = (log_probs + running_scores[:, None]).reshape(K * V)
        top_vals, top_idx = torch.topk(acc, K2)
        beams, tokens = top_idx // V, top_idx % V
        cands = [running[b] + [t] for b, t in zip(beams.tolist(), tokens.tolist())]
        hits = (tokens == eos) | torch.tensor(cur_len + 1 >= max_length)
        alive = top_vals + hits.to(torch.float32) * NEG
        nxt = torch.topk(alive, K)[1]
        running, running_scores = [cands[i] for i in nxt.tolist()], alive[nxt]
        just = hits & top_k_mask
        scored = top_vals / ((cur_len + 1 - prompt_len) ** length_penalty)
        scored = scored + (~improvable).to(torch.float32) * NEG
        scored = scored + (~just) * NEG
        merged_scores = torch.cat((fin_scores, scored))
        merged_seqs, merged_done = fin_seqs + cands, torch.cat((fin_done, just))
        keep = torch.topk(merged_scores, K)[1]
        fin_seqs = [merged_seqs[i] for i in keep.tolist()]
        fin_scores, fin_done = merged_scores[keep], merged_done[keep]
        cur_len += 1
        best = running_scores[:1] / ((cur_len - prompt_len) ** length_penalty)
        worst = torch.where(fin_done, torch.min(fin_scores), torch.tensor(NEG))
        improvable = improvable & torch.any(best > worst)
        if not (bool(improvable) and not bool(hits.all())):
            break
    assert fin_seqs[0] is not None and bool(fin_done[0]), "beam search ended without a finished hypothesis"
    return fin_seqs[0][prompt_len:]


class Mt19937_64:
    """std::mt19937_64 as the C++ standard specifies it (the default seed procedure)."""
    N, M, MASK = 312, 156, (1 << 64) - 1

    def __init__(self, seed):
        self.mt = [0] * self.N
        self.mt[0] = seed & self.MASK
        for i in range(1, self.N):
            self.mt[i] = (6364136223846793005 * (self.mt[i - 1] ^ (self.mt[i - 1] >> 62)) + i) & self.MASK
        self.index = self.N

    def __call__(self):
        if self.index >= self.N:
            upper, lower = 0xFFFFFFFF80000000, 0x7FFFFFFF
            for i in range(self.N):
                x = (self.mt[i] & upper) | (self.mt[(i + 1) % self.N] & lower)
                xa = x >> 1
                if x & 1:
                    xa ^= 0xB5026F5AA96619E9
                self.mt[i] = self.mt[(i + self.M) % self.N] ^ xa
            self.index = 0
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & self.MASK


def sample(model, prompt, eos, max_new, temperature, top_k, top_p, seed):
    rng = Mt19937_64(seed)
    seq = list(prompt)
    while len(seq) - len(prompt) < max_new:
        p = torch.softmax(last_logits(model, seq) / temperature, -1).double().numpy()
        order = sorted(range(len(p)), key=lambda i: (-p[i], i))
        keep = len(order) if top_k == 0 else min(len(order), top_k)
        if top_p < 1.0:
            cumulative = 0.0
            for i in range(keep):
                cumulative += p[order[i]]
                if cumulative >= top_p:
                    keep = i + 1
                    break
        kept = np.zeros(len(p))
        kept[order[:keep]] = p[order[:keep]]
        kept /= kept.sum()
        u = (rng() >> 11) * 2.0 ** -53
        cumulative, token = 0.0, int(order[keep - 1])
        for i in range(len(kept)):
            if kept[i] <= 0.0:
                continue
            cumulative += kept[i]
            if u < cumulative:
                token = i
                break
        # A draw within float rounding of a boundary would make the C++ and this disagree for no fault of either.
        edges = np.cumsum(kept[kept > 0])
        assert np.min(np.abs(edges - u)) > 1e-5, "a draw too close to a boundary: pick another seed"
        seq.append(token)
        if token == eos:
            break
    return seq[len(prompt):]


# ---------------------------------------------------------------------------------------------------------
# Folders in the hub's layout
def hub_config(c):
    return {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
            "bos_token_id": c["eos"], "embd_pdrop": 0.1, "eos_token_id": c["eos"], "initializer_range": 0.02,
            "layer_norm_epsilon": c["layer_norm_epsilon"], "model_type": "gpt2", "n_ctx": c["n_positions"],
            "n_embd": c["n_embd"], "n_head": c["n_head"], "n_inner": c.get("n_inner"), "n_layer": c["n_layer"],
            "n_positions": c["n_positions"], "reorder_and_upcast_attn": False, "resid_pdrop": 0.1,
            "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True, "summary_activation": None,
            "summary_first_dropout": 0.1, "summary_proj_to_labels": True, "summary_type": "cls_index",
            "summary_use_proj": True, "transformers_version": "4.46.0", "use_cache": True,
            "vocab_size": c["vocab_size"], "_name_or_path": c["name_or_path"]}


def hub_tensors(model, prefix, with_head, with_buffers):
    out = {}
    for name, t in model.named_parameters():
        out[prefix + name] = t.detach().numpy().astype(np.float32)
    if with_head:
        out["lm_head.weight"] = model.wte.weight.detach().numpy().astype(np.float32)
    if with_buffers:
        P = model.c["n_positions"]
        for l in range(model.c["n_layer"]):
            out[f"{prefix}h.{l}.attn.bias"] = np.tril(np.ones((P, P), dtype=np.float32))[None, None]
            out[f"{prefix}h.{l}.attn.masked_bias"] = np.array(-1e4, dtype=np.float32)
    return out


def write_folder(name, model, prefix, with_head, with_buffers):
    folder = os.path.join(OUT_DIR, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(hub_config(model.c), f, indent=2, sort_keys=True)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": model.c["eos"], "eos_token_id": model.c["eos"], "transformers_version": "4.46.0"}, f,
                  indent=2)
    for file in ("vocab.json", "merges.txt"):
        shutil.copyfile(os.path.join(BPE_DIR, file), os.path.join(folder, file))
    write_safetensors(os.path.join(folder, "model.safetensors"), hub_tensors(model, prefix, with_head, with_buffers),
                      {"format": "pt"})


def build(seed, **extra):
    torch.manual_seed(seed)
    with open(os.path.join(BPE_DIR, "vocab.json")) as f:
        V = len(json.load(f))
    c = dict(n_embd=16, n_head=4, n_layer=2, n_positions=32, vocab_size=V, layer_norm_epsilon=1e-5, eos=V - 1,
             name_or_path="stepformer-tests/tiny-gpt2")
    c.update(extra)
    model = GPT2Reference(c).eval()
    with torch.no_grad():  # wte larger than nn.Embedding's N(0, 1) would make every logit a tie-free spike: scale
        model.wte.weight.mul_(0.5)
    return model


def write_case(case, folder, model, ids, iv, prompt_text, decode):
    with torch.no_grad():
        tr = recorded_pass(model, torch.tensor(ids), iv)
        module = model(torch.tensor([ids]), iv)[0]
    diff = float((module - tr["logits"]).abs().max())
    assert diff < 1e-5, (case, diff)
    tensors = {"ids.tgt": np.array(ids, dtype=np.float32)}
    tensors.update({n: t.detach().contiguous().numpy().astype(np.float32) for n, t in tr.items()})
    meta = {"model": folder, "interventions": json.dumps(iv), "family": "gpt2", "case": case, "prompt": prompt_text}
    if decode:
        eos = model.c["eos"]
        meta["max_new"] = str(decode["max_new"])
        meta["greedy"] = json.dumps(greedy(model, ids, eos, decode["max_new"]))
        meta["beam"] = json.dumps(beam_search(model, ids, eos, decode["max_new"], decode["beam_width"],
                                              decode["length_penalty"]))
        meta["beam_width"], meta["length_penalty"] = str(decode["beam_width"]), str(decode["length_penalty"])
        s = decode["sample"]
        meta["sample"] = json.dumps(sample(model, ids, eos, decode["max_new"], s["temperature"], s["top_k"],
                                           s["top_p"], s["seed"]))
        meta["sampling"] = json.dumps(s)
        print(f"  {case}: greedy {meta['greedy']}\n      beam {meta['beam']}\n      sample {meta['sample']}")
    write_safetensors(os.path.join(OUT_DIR, case + ".trace.safetensors"), tensors, meta)


def main():
    torch.set_num_threads(1)
    if os.path.isdir(OUT_DIR):
        shutil.rmtree(OUT_DIR)
    os.makedirs(OUT_DIR)
    with open(os.path.join(BPE_DIR, "vocab.json")) as f:
        vocab = json.load(f)
    with open(os.path.join(BPE_DIR, "merges.txt"), encoding="utf-8") as f:
        merges = [tuple(line.split()) for line in f.read().split("\n")[1:] if line]
    bpe = BpeReference(vocab, merges)

    tiny = build(51)
    bare = build(52, n_inner=48, name_or_path="tiny-gpt2-bare")
    write_folder("tiny-gpt2", tiny, "transformer.", True, False)
    write_folder("tiny-gpt2-bare", bare, "", False, True)

    prompt = "A man in an orange shirt"
    ids, _ = bpe.encode(prompt)
    T = len(ids)
    H = tiny.c["n_head"]
    # A painted mask: head 1 of layer 0 sees only the first token and itself (a row never all blocked).
    blocked = [[0.0 if j in (0, i) else 1.0 for j in range(T)] for i in range(T)]
    decode = dict(max_new=8, beam_width=3, length_penalty=1.0,
                  sample=dict(temperature=0.9, top_k=40, top_p=0.95, seed=7))
    cases = [
        ("gpt2_plain", {}, decode),
        ("gpt2_head_off", {"heads_off": ["dec.1.2"]}, None),
        ("gpt2_no_causal", {"causal_mask": False}, None),
        ("gpt2_no_positions", {"positional_encoding": False}, None),
        ("gpt2_painted", {"custom_masks": [{"where": "dec.0.1", "blocked": blocked}]}, None),
        ("gpt2_all_off", {"heads_off": ["dec.0.0", "dec.1.3"], "causal_mask": False, "positional_encoding": False},
         None),
    ]
    assert H == 4
    for case, iv, dec in cases:
        write_case(case, "tiny-gpt2", tiny, ids, iv, prompt, dec)
    # The bare folder: another prompt with <|endoftext|> inside it (a document boundary, read as any token).
    prompt2 = "Two dogs play.<|endoftext|> A girl"
    ids2, _ = bpe.encode(prompt2)
    write_case("gpt2_bare_plain", "tiny-gpt2-bare", bare, ids2, {}, prompt2,
               dict(max_new=6, beam_width=2, length_penalty=1.3, sample=dict(temperature=1.3, top_k=0, top_p=0.8,
                                                                               seed=2026)))
    print("wrote", sorted(os.listdir(OUT_DIR)))


if __name__ == "__main__":
    main()
