#!/usr/bin/python3
"""Writes the PyTorch autograd references of gradient x input: tests/fixtures/attribution/*.gxi.safetensors.

Development time only (Debian's python3-torch, run with /usr/bin/python3); the files it writes are committed and
read by tests/unit/test_attribution.cpp, so CI needs no torch.

For each case it reads a committed forward fixture (tests/fixtures/forward: the model file of one of the two
PyTorch families, the ids, the interventions), loads the module's parameters into the family's torch module
(tests/reference/families.py), and runs make_forward_fixtures.stepwise (the functional pass under Stepformer's
trace names, already held equal to the torch module) in float64 with autograd through the token embeddings.
At one output row r and token y:
    f   = log_softmax(logits[r])[y]
    x_i = the token embedding row i as the pass uses it (src.tok_embed / tgt.tok_embed: E[id] times the scale)
    a_i = sum_c x_ic * df/dx_ic                       (gradient x input)
and writes gxi.src (S), gxi.tgt (T), f (1); and integrated gradients with the zero baseline, N = IG_STEPS steps
of the right Riemann sum (the pass again with every token embedding scaled by k/N, k = 1..N; its gradients at the
scaled embeddings averaged and multiplied by x): ig.src, ig.tgt, ig.f_baseline (f with every embedding 0);
__metadata__: trace (the forward fixture), row, token, ig_steps.
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import families  # noqa: E402
from make_forward_fixtures import native_weights, stepwise, write_safetensors  # noqa: E402
from make_logit_lens_fixtures import read_safetensors  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "fixtures")
IG_STEPS = 32  # integrated gradients' steps (the right Riemann sum k/N, k = 1..N), the app's default
OUT_DIR = os.path.join(FIXTURES, "attribution")

# (case, forward fixture, row, token): rows inside the target, tokens that are not the argmax (a lower f gives
# larger gradients), the interventions of the fixture itself (the causal mask off in pt_post_nocausal).
CASES = [
    ("pt_pre", "forward/pt_pre.trace.safetensors", 2, 7),
    ("pt_post", "forward/pt_post.trace.safetensors", 3, 11),
    ("pt_gelu", "forward/pt_gelu.trace.safetensors", 1, 5),
    ("pt_post_nocausal", "forward/pt_post_nocausal.trace.safetensors", 2, 9),
    ("s2s_learned", "forward/s2s_learned.trace.safetensors", 3, 6),
]


# The hub families, through their reference modules (make_gpt2_fixtures.GPT2Reference from modeling_gpt2.py,
# make_marian_fixtures.MarianReference from modeling_marian.py, make_bert_fixtures.BertReference from
# modeling_bert.py), with the interventions as Hugging Face's forward
# takes them; the token embeddings caught by a forward hook on the embedding module (wte; Marian's shared
# embed_tokens, called for the source, then the target). Where the module multiplies the embedding by a scale
# after the hook (Marian's embed_scale), x_i * df/dx_i is the same product: (s e) . (g / s) = e . g.
HUB_CASES = [
    ("gpt2_plain", "gpt2/gpt2_plain.trace.safetensors", 3, 40),
    ("gpt2_head_off", "gpt2/gpt2_head_off.trace.safetensors", 4, 17),
    ("marian_plain", "marian/marian_plain.trace.safetensors", 2, 30),
    ("marian_heads_off", "marian/marian_heads_off.trace.safetensors", 3, 12),
    # BERT (make_bert_fixtures.BertReference from modeling_bert.py): the blank's row (6, "[CLS] a man in an orange
    # [MASK] . [SEP]"), through token types, the embedding norm and the masked-LM head; the hook on
    # word_embeddings catches x_i before the token-type and position rows are added.
    ("bert_plain", "bert/bert_plain.trace.safetensors", 6, 9),
    ("bert_head_off", "bert/bert_head_off.trace.safetensors", 6, 14),
    ("bert_no_positions", "bert/bert_no_positions.trace.safetensors", 3, 20),
    ("bert_bare_plain", "bert/bert_bare_plain.trace.safetensors", 7, 11),
]


def hub_case(case, rel, row, token):
    import make_bert_fixtures
    import make_gpt2_fixtures
    import make_marian_fixtures
    trace_path = os.path.join(FIXTURES, rel)
    trace, meta = read_safetensors(trace_path)
    folder = os.path.join(os.path.dirname(trace_path), meta["model"])
    params, _ = read_safetensors(os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json")) as f:
        hub = json.load(f)
    iv = json.loads(meta["interventions"])
    caught = []

    def catch(module, inputs, output):
        output.retain_grad()
        caught.append(output)

    if meta["family"] == "gpt2":
        c = dict(n_embd=hub["n_embd"], n_head=hub["n_head"], n_layer=hub["n_layer"], n_positions=hub["n_positions"],
                 vocab_size=hub["vocab_size"], layer_norm_epsilon=hub["layer_norm_epsilon"], eos=hub["eos_token_id"])
        model = make_gpt2_fixtures.GPT2Reference(c)
        state = {k[len("transformer."):]: v for k, v in params.items() if k.startswith("transformer.")}
        model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
        model = model.double().eval()
        model.wte.register_forward_hook(catch)
        logits = model(trace["ids.tgt"].long()[None], iv)[0]
        sides = {"tgt": 0}
    elif meta["family"] == "bert":
        c = dict(hidden_size=hub["hidden_size"], num_attention_heads=hub["num_attention_heads"],
                 num_hidden_layers=hub["num_hidden_layers"], intermediate_size=hub["intermediate_size"],
                 max_position_embeddings=hub["max_position_embeddings"], type_vocab_size=hub["type_vocab_size"],
                 layer_norm_eps=hub["layer_norm_eps"], hidden_act=hub["hidden_act"], vocab_size=hub["vocab_size"],
                 pad_token_id=hub["pad_token_id"], name_or_path=hub.get("_name_or_path", ""))
        model = make_bert_fixtures.BertReference(c)
        state = {k: v.float() for k, v in params.items() if not k.startswith("bert.pooler")}
        if "bert.embeddings.word_embeddings.weight" not in state:  # saved without the "bert." prefix (bare)
            state = {("bert." + k if not k.startswith("cls.") else k): v for k, v in state.items()}
            state = {k.replace(".gamma", ".weight").replace(".beta", ".bias"): v for k, v in state.items()}
        state.pop("cls.predictions.decoder.weight", None)
        state.pop("cls.predictions.decoder.bias", None)
        missing, unexpected = model.load_state_dict(state, strict=False)
        assert not unexpected and not [m for m in missing if "position_ids" not in m], (missing, unexpected)
        model = model.double().eval()
        model.bert.embeddings.word_embeddings.register_forward_hook(catch)
        logits = model(trace["ids.src"].long()[None], iv)[0]
        sides = {"src": 0}
    else:
        c = dict(make_marian_fixtures.TINY_DE_EN, vocab_size=hub["vocab_size"],
                 decoder_vocab_size=hub["decoder_vocab_size"], pad_token_id=hub["pad_token_id"])
        model = make_marian_fixtures.MarianReference(c)
        state = {k: v.float() for k, v in params.items() if "embed_positions" not in k}
        state["final_logits_bias"] = state["final_logits_bias"].reshape(1, -1)
        model.load_state_dict(state, strict=False)
        model = model.double().eval()
        model.model.shared.register_forward_hook(catch)
        logits = model(trace["ids.src"].long()[None], trace["ids.tgt"].long()[None], iv)[0]
        sides = {"src": 0, "tgt": 1}
    worst = float((logits.detach().float() - trace["logits"].float()).abs().max())
    assert worst < 1e-4, (case, worst)
    f = torch.log_softmax(logits[row], -1)[token]
    f.backward()
    out = {"gxi." + side: (caught[i][0] * caught[i].grad[0]).sum(-1).detach().numpy().astype(np.float32)
           for side, i in sides.items()}
    out["f"] = np.array([f.item()], dtype=np.float32)
    # integrated gradients: the hook returns the embedding scaled by k/N (both sides of Marian's shared table)
    xs = {side: caught[i][0].detach() for side, i in sides.items()}
    handle_scale = {"alpha": 1.0}

    def scaled(module, inputs, output):
        output = output * handle_scale["alpha"]
        output.retain_grad()
        caught.append(output)
        return output

    hooked = {"gpt2": lambda: model.wte, "bert": lambda: model.bert.embeddings.word_embeddings,
              "marian": lambda: model.model.shared}[meta["family"]]()
    for h in list(hooked._forward_hooks):
        del hooked._forward_hooks[h]
    hooked.register_forward_hook(scaled)
    grads = {side: 0 for side in sides}
    f_base = None
    for k in range(0, IG_STEPS + 1):
        handle_scale["alpha"] = k / IG_STEPS
        caught.clear()
        if meta["family"] == "gpt2":
            lk = model(trace["ids.tgt"].long()[None], iv)[0]
        elif meta["family"] == "bert":
            lk = model(trace["ids.src"].long()[None], iv)[0]
        else:
            lk = model(trace["ids.src"].long()[None], trace["ids.tgt"].long()[None], iv)[0]
        fk = torch.log_softmax(lk[row], -1)[token]
        if k == 0:
            f_base = fk.item()
            continue
        fk.backward()
        for side, i in sides.items():
            grads[side] = grads[side] + caught[i].grad[0]
    for side in sides:
        out["ig." + side] = (xs[side] * grads[side] / IG_STEPS).sum(-1).numpy().astype(np.float32)
    out["ig.f_baseline"] = np.array([f_base], dtype=np.float32)
    write_safetensors(os.path.join(OUT_DIR, case + ".gxi.safetensors"), out,
                      {"trace": rel, "case": case, "row": str(row), "token": str(token), "ig_steps": str(IG_STEPS)})
    print("%s: row %d token %d f %.6f, |gxi| max %s; logits vs fixture %.1e" % (
        case, row, token, f.item(), ", ".join("%.4f" % float(np.abs(v).max()) for k, v in out.items() if k != "f"),
        worst))


# Attention rollout (explain/attribution.h has the definition; Abnar & Zuidema 2020 for one stack), in float64
# from the attention maps PyTorch's modules recorded in the forward fixtures: A_l the mean of the heads that are
# on, A~ = 0.5 A + 0.5 I with rows renormalised, R_enc = A~_L ... A~_1; a decoder position carries D (over the
# decoder's inputs, from I) and X (over the source, from 0): self-attention D <- A~ D, X <- A~ X; cross-attention
# X <- 0.5 X + 0.5 C R_enc / rowsum(C), D <- 0.5 D (rows of C that sum to 0 left alone). Writes rollout (rows, S + T).
ROLLOUT_CASES = [
    "forward/pt_pre.trace.safetensors",
    "forward/pt_post_nocausal.trace.safetensors",
    "marian/marian_heads_off.trace.safetensors",
    "gpt2/gpt2_plain.trace.safetensors",
    "gpt2/gpt2_head_off.trace.safetensors",
    "bert/bert_plain.trace.safetensors",
    "bert/bert_head_off.trace.safetensors",
    "bert/bert_padded.trace.safetensors",
]


def rollout(trace, iv):
    off = set(iv.get("heads_off", []))

    def mean_on(kind, l):
        probs = trace["%s.%d.%s_attn.probs" % ("dec" if kind == "cross" else kind, l,
                                               "cross" if kind == "cross" else "self")].double().numpy()
        on = [h for h in range(probs.shape[0]) if "%s.%d.%d" % (kind, l, h) not in off]
        return probs[on].mean(0) if on else np.zeros(probs.shape[1:])

    def residual(a):
        r = 0.5 * a + 0.5 * np.eye(a.shape[0])
        sums = r.sum(1, keepdims=True)
        return np.where(sums > 0, r / np.where(sums > 0, sums, 1), r)

    def layers(kind):
        n = 0
        while "%s.%d.self_attn.probs" % (kind, n) in trace:
            n += 1
        return n

    enc = None
    if "enc.0.self_attn.probs" in trace:
        S = trace["enc.0.self_attn.probs"].shape[1]
        enc = np.eye(S)
        for l in range(layers("enc")):
            enc = residual(mean_on("enc", l)) @ enc
        if "dec.0.self_attn.probs" not in trace:
            return enc
    T = trace["dec.0.self_attn.probs"].shape[1]
    S = 0 if enc is None else enc.shape[0]
    D, X = np.eye(T), np.zeros((T, S))
    for l in range(layers("dec")):
        a = residual(mean_on("dec", l))
        D, X = a @ D, a @ X
        if enc is None:
            continue
        c = mean_on("cross", l)
        brought = c @ enc
        for i in range(T):
            s = c[i].sum()
            if s > 0:
                X[i] = 0.5 * X[i] + 0.5 * brought[i] / s
                D[i] = 0.5 * D[i]
    return np.concatenate([X, D], 1)


def rollout_cases():
    for rel in ROLLOUT_CASES:
        trace, meta = read_safetensors(os.path.join(FIXTURES, rel))
        iv = json.loads(meta["interventions"])
        r = rollout(trace, iv)
        assert np.allclose(r.sum(1), 1.0), r.sum(1)
        case = os.path.basename(rel).split(".")[0]
        write_safetensors(os.path.join(OUT_DIR, case + ".rollout.safetensors"),
                          {"rollout": r.astype(np.float32)}, {"trace": rel, "case": case})
        print("%s rollout: %s, largest %.4f" % (case, r.shape, r.max()))


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    rollout_cases()
    for case, rel, row, token in CASES:
        trace_path = os.path.join(FIXTURES, rel)
        trace, meta = read_safetensors(trace_path)
        model_path = os.path.join(os.path.dirname(trace_path), meta["model"])
        params, model_meta = read_safetensors(model_path)
        c = json.loads(model_meta["config"])
        family = model_meta["family"]
        model = families.build(family, c)
        state = {k: v.float() for k, v in params.items()}
        model.load_state_dict(state, strict=False)
        w = {k: v.double() for k, v in native_weights(family, model).items()}
        for side in ("src", "tgt"):
            w[side + "_embedding"].requires_grad_(True)
        iv = json.loads(meta["interventions"])
        src = trace["ids.src"].long()
        tgt = trace["ids.tgt"].long()
        tr = stepwise(c, w, src, tgt, iv)
        for side in ("src", "tgt"):
            tr[side + ".tok_embed"].retain_grad()
        f = torch.log_softmax(tr["logits"][row], -1)[token]
        f.backward()
        out = {}
        for side in ("src", "tgt"):
            x = tr[side + ".tok_embed"]
            out["gxi." + side] = (x * x.grad).sum(-1).detach().numpy().astype(np.float32)
        out["f"] = np.array([f.item()], dtype=np.float32)
        # integrated gradients, N steps: the pass again with the token tables scaled by k/N (tok_embed = k/N x)
        grads = {"src": 0, "tgt": 0}
        xs = {side: tr[side + ".tok_embed"].detach() for side in ("src", "tgt")}
        f_base = None
        for k in range(0, IG_STEPS + 1):
            wk = dict(w, src_embedding=w["src_embedding"].detach() * (k / IG_STEPS),
                      tgt_embedding=w["tgt_embedding"].detach() * (k / IG_STEPS))
            for side in ("src", "tgt"):
                wk[side + "_embedding"].requires_grad_(True)
            trk = stepwise(c, wk, src, tgt, iv)
            for side in ("src", "tgt"):
                trk[side + ".tok_embed"].retain_grad()
            fk = torch.log_softmax(trk["logits"][row], -1)[token]
            if k == 0:
                f_base = fk.item()
                continue
            fk.backward()
            for side in ("src", "tgt"):
                grads[side] = grads[side] + trk[side + ".tok_embed"].grad
        for side in ("src", "tgt"):
            out["ig." + side] = (xs[side] * grads[side] / IG_STEPS).sum(-1).numpy().astype(np.float32)
        out["ig.f_baseline"] = np.array([f_base], dtype=np.float32)
        # the stepwise logits are the fixture's (the module's), in float64 now
        worst = float((tr["logits"].detach().float() - trace["logits"].float()).abs().max())
        assert worst < 1e-4, (case, worst)
        write_safetensors(os.path.join(OUT_DIR, case + ".gxi.safetensors"), out,
                          {"trace": rel, "case": case, "row": str(row), "token": str(token), "ig_steps": str(IG_STEPS)})
        print("%s: row %d token %d f %.6f, |gxi| max %.4f (src) %.4f (tgt); logits vs fixture %.1e" % (
            case, row, token, f.item(), float(np.abs(out["gxi.src"]).max()), float(np.abs(out["gxi.tgt"]).max()),
            worst))
    for case in HUB_CASES:
        hub_case(*case)


if __name__ == "__main__":
    main()
