#!/usr/bin/python3
"""Writes the PyTorch reference fixtures of the from-scratch family: tests/fixtures/from_scratch/*.safetensors.

Development time only (Debian's python3-torch, run with /usr/bin/python3); the files are committed and read by
tests/unit/test_from_scratch.cpp, so CI needs no torch.

The model is the study note's "Transformer from scratch" (../shared/seeds/001_65bd59ad5c71ccfe.txt) as
tests/reference/families.py writes it again from the note (NoteTransformer: Encoder, Decoder, fc_out;
selfAttention with its reshape-without-transpose heads, EncoderBlock, DecoderBlock). For each case this script
builds a small random model, runs the note's modules on the sentence pair with each selfAttention recording its
intermediates (q, k, v and the rest, as the note's variables hold them), names them as Stepformer's trace does
(docs/trace.md), ASSERTS that the recorded pass gives the note's own Transformer.forward output, and writes
  <model>.model.safetensors   a Stepformer model file: the state_dict under the note's own names (what
                              `torch.save(model.state_dict())` writes), family from-scratch, config, vocabularies
  <case>.trace.safetensors    ids.src, ids.tgt (as F32) and every expected intermediate under its trace name;
                              __metadata__: model, interventions (JSON), family, case, and "greedy": the tokens
                              the note's way of decoding gives (feed <sos> + what is decoded, take the last row's
                              argmax, until <eos> or `steps` tokens), from the case's source
Interventions are made the note's way: the padding mask off is an all-ones make_pad_mask, the causal mask off an
all-ones make_trg_mask, positions off a zero pos_embed, a head off zeroes that head's matmul(softmax, V) before
the reshape back (selfAttention.heads_off, our one addition to the note's code).
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import families  # noqa: E402
from make_forward_fixtures import write_safetensors, randomise, vocabulary, PAD, BOS, EOS  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "from_scratch")
GREEDY_STEPS = 10


def layer_norm_stats(name, x, eps, tr):
    tr[name + "_mean"] = x.mean(-1)
    tr[name + "_std"] = torch.sqrt(x.var(-1, unbiased=False) + eps)


def attention_record(module, prefix, tr):
    for key, value in module.record.items():
        tr[f"{prefix}.{key}"] = value[0]  # batch of one
    module.record = None


def feed_forward(block, x):
    """An EncoderBlock's feed_forawrd, its steps kept: (hidden_pre, hidden, out)."""
    hidden_pre = block.feed_forawrd[0](x)
    hidden = block.feed_forawrd[1](hidden_pre)
    return hidden_pre, hidden, block.feed_forawrd[2](hidden)


def recorded_pass(model, src, tgt, iv):
    """One sentence pair (1, S), (1, T) through the note's modules, every intermediate under its trace name.
    The lines follow the note's forward methods one by one; only the recording is added."""
    tr = {}
    eps = 1e-5
    S, T = src.shape[1], tgt.shape[1]
    src_mask = model.make_pad_mask(src, src)
    src_trg_mask = model.make_pad_mask(tgt, src)
    trg_mask = model.make_trg_mask(tgt)
    if not iv.get("padding_mask", True):
        src_mask, src_trg_mask = torch.ones_like(src_mask), torch.ones_like(src_trg_mask)
    if not iv.get("causal_mask", True):
        trg_mask = torch.ones_like(trg_mask)
    for ref in iv.get("heads_off", []):
        kind, layer, head = ref.split(".")
        layer, head = int(layer), int(head)
        att = (model.Encoder.layers[layer].attention if kind == "enc" else
               model.Decoder.layers[layer].attention if kind == "dec" else
               model.Decoder.layers[layer].encoder_block.attention)
        att.heads_off.add(head)
    positions = iv.get("positional_encoding", True)
    # A painted mask replaces the computed one for its head alone: that attention gets a per-head mask
    # (1, H, Tq, Tk), the note's masked_fill broadcasting over it as over (1, 1, Tq, Tk).
    painted = {}
    for m in iv.get("custom_masks", []):
        kind, layer, head = m["where"].split(".")
        painted.setdefault((kind, int(layer)), {})[int(head)] = torch.tensor(m["blocked"], dtype=torch.bool)

    def mask_for(kind, layer, mask, heads):
        if (kind, layer) not in painted:
            return mask
        full = mask.expand(1, heads, mask.shape[-2], mask.shape[-1]).clone().bool()
        for h, blocked in painted[(kind, layer)].items():
            full[0, h] = ~blocked
        return full

    # Encoder.forward
    enc = model.Encoder
    pos = enc.pos_embed[:, :S, :] if positions else torch.zeros(1, S, enc.embed_size)
    tok = enc.word_embedding(src)
    out = tok + pos
    tr["src.tok_embed"], tr["src.pos"], tr["enc.in"] = tok[0], pos[0], out[0]
    for l, block in enumerate(enc.layers):
        p = f"enc.{l}"
        block.attention.record = {}
        attention = block.attention(out, out, out, mask_for("enc", l, src_mask, block.attention.heads))
        attention_record(block.attention, p + ".self_attn", tr)
        r1 = attention + out
        x = block.norm1(r1)
        hidden_pre, hidden, forward = feed_forward(block, x)
        r2 = forward + x
        out = block.norm2(r2)
        tr[p + ".residual1"], tr[p + ".norm1"], tr[p + ".residual2"], tr[p + ".norm2"] = r1[0], x[0], r2[0], out[0]
        tr[p + ".ffn_hidden_pre"], tr[p + ".ffn_hidden"], tr[p + ".ffn_out"] = hidden_pre[0], hidden[0], forward[0]
        layer_norm_stats(p + ".norm1", r1[0], eps, tr)
        layer_norm_stats(p + ".norm2", r2[0], eps, tr)
        tr[p + ".out"] = out[0]
    enc_src = out
    tr["enc.out"] = enc_src[0]

    # Decoder.forward, DecoderBlock.forward, its EncoderBlock.forward
    dec = model.Decoder
    pos = dec.pos_embed[:, :T, :] if positions else torch.zeros(1, T, enc.embed_size)
    tok = dec.word_embedding(tgt)
    out = tok + pos
    tr["tgt.tok_embed"], tr["tgt.pos"], tr["dec.in"] = tok[0], pos[0], out[0]
    for l, layer in enumerate(dec.layers):
        p = f"dec.{l}"
        layer.attention.record = {}
        attention = layer.attention(out, out, out, mask_for("dec", l, trg_mask, layer.attention.heads))
        attention_record(layer.attention, p + ".self_attn", tr)
        r1 = attention + out
        query = layer.norm(r1)
        block = layer.encoder_block
        block.attention.record = {}
        cross = block.attention(enc_src, enc_src, query, mask_for("cross", l, src_trg_mask, block.attention.heads))
        attention_record(block.attention, p + ".cross_attn", tr)
        r2 = cross + query
        x = block.norm1(r2)
        hidden_pre, hidden, forward = feed_forward(block, x)
        r3 = forward + x
        out = block.norm2(r3)
        for name, t in (("residual1", r1), ("norm1", query), ("residual2", r2), ("norm2", x), ("residual3", r3),
                        ("norm3", out), ("ffn_hidden_pre", hidden_pre), ("ffn_hidden", hidden),
                        ("ffn_out", forward), ("out", out)):
            tr[f"{p}.{name}"] = t[0]
        layer_norm_stats(p + ".norm1", r1[0], eps, tr)
        layer_norm_stats(p + ".norm2", r2[0], eps, tr)
        layer_norm_stats(p + ".norm3", r3[0], eps, tr)
    tr["dec.out"] = out[0]
    logits = model.fc_out(out)
    tr["logits"] = logits[0]
    tr["probs"] = torch.softmax(logits[0], -1)

    # The note's own forward (its masks, the same interventions) must give the same output.
    if positions and not painted:  # (the modules' own forward has one mask for every layer)
        enc_out = model.Encoder(src, src_mask)
        own = F.log_softmax(model.fc_out(model.Decoder(tgt, enc_out, src_trg_mask, trg_mask)), dim=-1)
        err = (own[0] - F.log_softmax(logits[0], -1)).abs().max().item()
        assert err < 1e-5, f"the recorded pass differs from the note's forward by {err}"
        if not iv:
            err = (model(src, tgt)[0] - own[0]).abs().max().item()
            assert err == 0.0, f"Transformer.forward differs from Encoder/Decoder/fc_out by {err}"
    for a in (m for m in model.modules() if isinstance(m, families.selfAttention)):
        a.heads_off = set()
    return tr


def note_greedy(model, src, steps):
    """The note's decoding: <sos>, then the whole prefix through decode() at every step, the last row's argmax."""
    enc_src = model.encode(src)
    trg = [BOS]
    for _ in range(steps):
        out = model.decode(src, torch.tensor([trg]), enc_src)  # (1, len, Vt) log-probabilities
        token = int(out[0, -1].argmax())
        trg.append(token)
        if token == EOS:
            break
    return trg[1:]


def write_model(name, model, cfg):
    tensors = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    meta = {"format": "stepformer-model", "format_version": "1", "family": "from-scratch", "config": json.dumps(cfg),
            "src_vocab": json.dumps(vocabulary(cfg["src_vocab_size"])),
            "tgt_vocab": json.dumps(vocabulary(cfg["tgt_vocab_size"])),
            "tokenizer": json.dumps({"lowercase": True, "split_punctuation": True, "moses_escape": True,
                                     "normalize_punctuation": True, "source_language": "de",
                                     "target_language": "en", "add_bos_eos": True}),
            "provenance": json.dumps({"written_by": "tests/reference/make_from_scratch_fixtures.py",
                                      "weights": "random"})}
    path = os.path.join(OUT_DIR, name + ".model.safetensors")
    write_safetensors(path, tensors, meta)
    return os.path.getsize(path)


def write_case(case, model_name, model, src, tgt, iv):
    with torch.no_grad():
        tr = recorded_pass(model, src.unsqueeze(0), tgt.unsqueeze(0), iv)
        greedy = note_greedy(model, src.unsqueeze(0), GREEDY_STEPS) if not iv else []
    tensors = {"ids.src": src.numpy().astype(np.float32), "ids.tgt": tgt.numpy().astype(np.float32)}
    for k, v in tr.items():
        tensors[k] = v.detach().numpy().astype(np.float32)
    meta = {"model": model_name + ".model.safetensors", "interventions": json.dumps(iv), "family": "from-scratch",
            "case": case, "greedy": json.dumps(greedy), "greedy_steps": str(GREEDY_STEPS)}
    path = os.path.join(OUT_DIR, case + ".trace.safetensors")
    write_safetensors(path, tensors, meta)
    print(f"{case:22s} {len(tr)} tensors, greedy {greedy}")
    return os.path.getsize(path)


def ids(rng, n, vocab, bos=False, pad_to=None):
    out = [BOS] if bos else []
    out += [int(x) for x in rng.integers(4, vocab, size=n - len(out))]
    out += [PAD] * ((pad_to or n) - n)
    return torch.tensor(out, dtype=torch.long)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for f in os.listdir(OUT_DIR):
        if f.endswith(".safetensors"):
            os.remove(os.path.join(OUT_DIR, f))
    rng = np.random.default_rng(2026)
    total = 0
    # Two sizes: D = 4 with T not a multiple of H (rows of a head mix tokens unevenly), and D = 8 with 3 heads.
    small = families.from_scratch_config(embed_size=16, heads=4, num_layers=2, forward_expansion=2,
                                         src_vocab_size=23, trg_vocab_size=29)
    wide = families.from_scratch_config(embed_size=24, heads=3, num_layers=1, forward_expansion=4,
                                        src_vocab_size=31, trg_vocab_size=19, num_decoder_layers=2, max_length=40)
    for name, cfg, seed in (("fs_small", small, 22), ("fs_wide", wide, 14)):
        torch.manual_seed(seed)
        model = families.build("from-scratch", cfg)
        randomise(model, seed)  # seeds picked so that greedy decoding does not repeat one token
        model.eval()
        total += write_model(name, model, cfg)
        S, T = (7, 6) if name == "fs_small" else (5, 7)
        src, tgt = ids(rng, S, cfg["src_vocab_size"]), ids(rng, T, cfg["tgt_vocab_size"], bos=True)
        total += write_case(name, name, model, src, tgt, {})
        if name != "fs_small":
            continue
        # A padded source and target (pads at the end): padded query rows come out uniform.
        src_p, tgt_p = ids(rng, 5, cfg["src_vocab_size"], pad_to=7), ids(rng, 4, cfg["tgt_vocab_size"], True, 6)
        total += write_case("fs_small_padded", name, model, src_p, tgt_p, {})
        # The same as one padded batch of the note's own forward: each row as its sentence alone.
        with torch.no_grad():
            batch = model(torch.stack([src, src_p]), torch.stack([tgt, tgt_p]))
            for b, (s, t) in enumerate(((src, tgt), (src_p, tgt_p))):
                alone = model(s.unsqueeze(0), t.unsqueeze(0))[0]
                assert (batch[b] - alone).abs().max().item() < 1e-5, "a padded batch row differs from its sentence"
        total += write_case("fs_small_heads_off", name, model, src_p, tgt_p,
                            {"heads_off": ["enc.0.1", "dec.1.2", "cross.0.3", "cross.1.0"]})
        total += write_case("fs_small_no_masks", name, model, src_p, tgt_p,
                            {"padding_mask": False, "causal_mask": False})
        total += write_case("fs_small_no_positions", name, model, src, tgt, {"positional_encoding": False})
        # Painted masks (1 = blocked) on one head each: a whole row blocked comes out uniform, as -1e20 makes it.
        S, T = len(src_p), len(tgt_p)
        enc_paint = [[1 if (i == 2 or j == i + 1) else 0 for j in range(S)] for i in range(S)]
        cross_paint = [[1 if (i + j) % 3 == 0 else 0 for j in range(S)] for i in range(T)]
        dec_paint = [[1 if j > i or j == 0 and i > 0 else 0 for j in range(T)] for i in range(T)]
        total += write_case("fs_small_painted", name, model, src_p, tgt_p,
                            {"custom_masks": [{"where": "enc.1.2", "blocked": enc_paint},
                                              {"where": "cross.0.1", "blocked": cross_paint},
                                              {"where": "dec.1.3", "blocked": dec_paint}]})
    print(f"total {total} bytes in {OUT_DIR}")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
