#!/usr/bin/python3
"""Convert a PyTorch checkpoint of a tutorial Transformer into one Stepformer model file (.safetensors).

    /usr/bin/python3 tools/convert_pytorch.py --family pytorch-tutorial|seq2seq-tutorial \\
        --checkpoint STATE_DICT.pt --config CONFIG.json --src-vocab SRC.txt --tgt-vocab TGT.txt \\
        --out MODEL.safetensors [--src-lang de --tgt-lang en] [--dataset ... --train-command ... --score bleu=35.1]
    /usr/bin/python3 tools/convert_pytorch.py --family from-scratch --checkpoint X.pt \\
        --src-vocab S.txt --tgt-vocab T.txt --out M.safetensors [--max-length N] [--config CONFIG.json]

Needs Debian's python3-torch (run it with /usr/bin/python3); the app itself never needs Python.

  CONFIG.json  the native config keys (docs/model-files.md). src_vocab_size and tgt_vocab_size may be left out:
               they are taken from the vocabulary files.
  SRC.txt      one token per line, the line number (from 0) being its id, as the training data were tokenized
               (lowercased, Moses-escaped: "&apos;s").

from-scratch is the study notes' "Transformer from scratch" (../shared/seeds/001_*.txt): everything but the
longest sequence is read from the state_dict's shapes (width from the embeddings, heads from the shared
(head_dim, head_dim) query projection, layers by counting, feed-forward width, vocabulary sizes); --max-length
is the note's max_length (default 140); the special ids are those of <unk>, <pad>, <sos>/<bos> and <eos> in the
vocabularies (torchtext's 0, 1, 2, 3 when they are absent). --config, when given, must agree with the shapes.

The converter checks the state_dict against the family's names and shapes (the same table as
core/model/name_tables.cpp), the config against the same ranges as the C++ loader, every weight for NaN/Inf, and
the vocabularies for duplicates; it stops at the first class of fault with a message that names every offender.
The file is written atomically (temporary file, fsync, rename).
"""
import argparse
import datetime
import hashlib
import json
import math
import os
import re
import struct
import sys

CONFIG_KEYS = {  # key: (type, default); None default = required
    "d_model": (int, None), "n_heads": (int, None), "n_encoder_layers": (int, None), "n_decoder_layers": (int, None),
    "d_ff": (int, None), "src_vocab_size": (int, None), "tgt_vocab_size": (int, None), "max_positions": (int, 256),
    "positional_encoding": (("sinusoidal", "learned"), "sinusoidal"),
    "sinusoid_layout": (("interleaved", "halves"), "interleaved"),
    "embedding_scale": (("sqrt_d_model", "one"), "sqrt_d_model"),
    "norm_placement": (("post", "pre"), "post"),
    "encoder_final_norm": (bool, False), "decoder_final_norm": (bool, False),
    "activation": (("relu", "gelu", "silu"), "relu"), "attention": (("split_heads", "reshape_heads"), "split_heads"),
    "layer_norm_eps": (float, 1e-5), "bias": (bool, True),
    "tie_output_embedding": (bool, False), "share_embeddings": (bool, False),
    "pad_id": (int, 1), "bos_id": (int, 2), "eos_id": (int, 3), "unk_id": (int, 0),
}

# What each tutorial fixes (mirrors check_family_config in core/model/name_tables.cpp) and what it usually has.
FAMILY_NEEDS = {
    "pytorch-tutorial": {"positional_encoding": "sinusoidal", "encoder_final_norm": True, "decoder_final_norm": True,
                         "bias": True, "share_embeddings": False, "tie_output_embedding": False},
    "seq2seq-tutorial": {"positional_encoding": "learned", "encoder_final_norm": False, "decoder_final_norm": False,
                         "bias": True, "share_embeddings": False, "tie_output_embedding": False},
    "from-scratch": {"attention": "reshape_heads", "positional_encoding": "sinusoidal", "embedding_scale": "one",
                     "norm_placement": "post", "activation": "relu", "encoder_final_norm": False,
                     "decoder_final_norm": False, "bias": True, "share_embeddings": False,
                     "tie_output_embedding": False},
}
FAMILY_USUAL = {
    "pytorch-tutorial": {"embedding_scale": "sqrt_d_model"},
    "seq2seq-tutorial": {"embedding_scale": "sqrt_d_model", "norm_placement": "post", "activation": "relu"},
    "from-scratch": {},
}
for _family, _needs in FAMILY_NEEDS.items():  # only from-scratch may (and must) reshape its heads
    _needs.setdefault("attention", "split_heads")


class ConversionError(Exception):
    pass


def note(message):
    print(f"convert_pytorch.py: {message}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------------------
# config
def read_config(path, src_vocab_size, tgt_vocab_size, family, raw=None):
    """The config of CONFIG.json at `path`, or of the dict `raw` (then `path` only names it in messages)."""
    if raw is None:
        try:
            with open(path, encoding="utf-8") as f:
                raw = json.load(f)
        except OSError as e:
            raise ConversionError(f"cannot read config {path}: {e.strerror}")
        except json.JSONDecodeError as e:
            raise ConversionError(f"config {path} is not valid JSON: {e}")
    if not isinstance(raw, dict):
        raise ConversionError(f"config {path}: expected a JSON object")
    unknown = sorted(set(raw) - set(CONFIG_KEYS))
    if unknown:
        raise ConversionError(f"config {path}: unknown key(s) {', '.join(unknown)}; the keys are: "
                              f"{', '.join(CONFIG_KEYS)}")
    cfg = {}
    for key, (kind, default) in CONFIG_KEYS.items():
        if key not in raw:
            if key == "src_vocab_size":
                cfg[key] = src_vocab_size
            elif key == "tgt_vocab_size":
                cfg[key] = tgt_vocab_size
            elif default is None:
                raise ConversionError(f"config {path}: missing key '{key}'")
            else:
                cfg[key] = default
            continue
        value = raw[key]
        if isinstance(kind, tuple):
            ok = value in kind
            expected = " or ".join(f'"{k}"' for k in kind)
        elif kind is bool:
            ok, expected = isinstance(value, bool), "true or false"
        elif kind is int:
            ok, expected = isinstance(value, int) and not isinstance(value, bool), "an integer"
        else:
            ok, expected = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
        if not ok:
            raise ConversionError(f"config {path}: '{key}' is {json.dumps(value)}; expected {expected}")
        cfg[key] = float(value) if kind is float else value

    problems = []
    for key in ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff", "max_positions"):
        if cfg[key] <= 0:
            problems.append(f"{key} must be positive, got {cfg[key]}")
    if cfg["n_heads"] > 0 and cfg["d_model"] % cfg["n_heads"]:
        problems.append(f"n_heads ({cfg['n_heads']}) does not divide d_model ({cfg['d_model']})")
    if not (cfg["layer_norm_eps"] > 0 and math.isfinite(cfg["layer_norm_eps"])):
        problems.append("layer_norm_eps must be a positive finite number")
    if cfg["src_vocab_size"] != src_vocab_size:
        problems.append(f"src_vocab_size is {cfg['src_vocab_size']} but {src_vocab_size} tokens are in the source "
                        "vocabulary file")
    if cfg["tgt_vocab_size"] != tgt_vocab_size:
        problems.append(f"tgt_vocab_size is {cfg['tgt_vocab_size']} but {tgt_vocab_size} tokens are in the target "
                        "vocabulary file")
    smaller = min(src_vocab_size, tgt_vocab_size)
    for key in ("pad_id", "bos_id", "eos_id", "unk_id"):
        if not 0 <= cfg[key] < smaller:
            problems.append(f"{key} ({cfg[key]}) is outside the vocabulary (size {smaller})")
    if cfg["eos_id"] in (cfg["pad_id"], cfg["bos_id"]):  # bos may be pad (Marian's decoder start)
        problems.append("eos_id must differ from pad_id and bos_id")
    for key, value in FAMILY_NEEDS[family].items():
        if cfg[key] != value:
            problems.append(f"family '{family}' needs {key} {json.dumps(value)}, the config says {json.dumps(cfg[key])}")
    if problems:
        raise ConversionError(f"config {path}:\n  " + "\n  ".join(problems))
    for key, value in FAMILY_USUAL[family].items():
        if cfg[key] != value:
            note(f"warning: {key} is {json.dumps(cfg[key])}; the {family} tutorial uses {json.dumps(value)}")
    return cfg


def read_vocab(path, side):
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except OSError as e:
        raise ConversionError(f"cannot read {side} vocabulary {path}: {e.strerror}")
    except UnicodeDecodeError as e:
        raise ConversionError(f"{side} vocabulary {path} is not UTF-8: {e}")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    tokens, seen, problems = [], {}, []
    for i, line in enumerate(lines):
        token = line[:-1] if line.endswith("\r") else line
        if token == "":
            problems.append(f"line {i + 1} (id {i}) is empty")
        elif token != token.strip():
            problems.append(f"line {i + 1} (id {i}) has leading or trailing whitespace: {token!r}")
        elif token in seen:
            problems.append(f"token {token!r} appears twice (ids {seen[token]} and {i})")
        seen.setdefault(token, i)
        tokens.append(token)
    if not tokens:
        problems.append("no tokens")
    if problems:
        raise ConversionError(f"{side} vocabulary {path}:\n  " + "\n  ".join(problems[:20]) +
                              (f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""))
    return tokens


# ---------------------------------------------------------------------------------------------------------
# names and shapes: the Python mirror of core/model/name_tables.cpp
def expected_tensors(family, cfg):
    C, F, Vs, Vt, P = cfg["d_model"], cfg["d_ff"], cfg["src_vocab_size"], cfg["tgt_vocab_size"], cfg["max_positions"]
    out = {}

    def linear(name, rows, cols):
        out[f"{name}.weight"] = (rows, cols)
        out[f"{name}.bias"] = (rows,)

    def norm(name):
        out[f"{name}.weight"] = (C,)
        out[f"{name}.bias"] = (C,)

    if family == "from-scratch":
        D = C // cfg["n_heads"]

        def attention(name):  # selfAttention: one (D, D) map per Q, K, V for every head, no bias; fc_out
            for proj in ("query", "key", "value"):
                out[f"{name}.{proj}.weight"] = (D, D)
            linear(f"{name}.fc_out", C, C)

        def block(p):  # EncoderBlock
            attention(p + "attention")
            norm(p + "norm1")
            norm(p + "norm2")
            linear(p + "feed_forawrd.0", F, C)
            linear(p + "feed_forawrd.2", C, F)

        out["Encoder.word_embedding.weight"] = (Vs, C)
        for i in range(cfg["n_encoder_layers"]):
            block(f"Encoder.layers.{i}.")
        out["Decoder.word_embedding.weight"] = (Vt, C)
        for i in range(cfg["n_decoder_layers"]):
            p = f"Decoder.layers.{i}."
            norm(p + "norm")
            attention(p + "attention")
            block(p + "encoder_block.")
        linear("fc_out", Vt, C)
        return out

    if family == "pytorch-tutorial":
        out["src_tok_emb.embedding.weight"] = (Vs, C)
        out["tgt_tok_emb.embedding.weight"] = (Vt, C)

        def mha(name):
            out[f"{name}.in_proj_weight"] = (3 * C, C)
            out[f"{name}.in_proj_bias"] = (3 * C,)
            linear(f"{name}.out_proj", C, C)

        for i in range(cfg["n_encoder_layers"]):
            p = f"transformer.encoder.layers.{i}."
            mha(p + "self_attn")
            linear(p + "linear1", F, C)
            linear(p + "linear2", C, F)
            norm(p + "norm1")
            norm(p + "norm2")
        norm("transformer.encoder.norm")
        for i in range(cfg["n_decoder_layers"]):
            p = f"transformer.decoder.layers.{i}."
            mha(p + "self_attn")
            mha(p + "multihead_attn")
            linear(p + "linear1", F, C)
            linear(p + "linear2", C, F)
            norm(p + "norm1")
            norm(p + "norm2")
            norm(p + "norm3")
        norm("transformer.decoder.norm")
        linear("generator", Vt, C)
    else:
        def attention(name):
            for proj in ("fc_q", "fc_k", "fc_v", "fc_o"):
                linear(f"{name}.{proj}", C, C)

        out["encoder.tok_embedding.weight"] = (Vs, C)
        out["encoder.pos_embedding.weight"] = (P, C)
        for i in range(cfg["n_encoder_layers"]):
            p = f"encoder.layers.{i}."
            attention(p + "self_attention")
            norm(p + "self_attn_layer_norm")
            linear(p + "positionwise_feedforward.fc_1", F, C)
            linear(p + "positionwise_feedforward.fc_2", C, F)
            norm(p + "ff_layer_norm")
        out["decoder.tok_embedding.weight"] = (Vt, C)
        out["decoder.pos_embedding.weight"] = (P, C)
        for i in range(cfg["n_decoder_layers"]):
            p = f"decoder.layers.{i}."
            attention(p + "self_attention")
            norm(p + "self_attn_layer_norm")
            attention(p + "encoder_attention")
            norm(p + "enc_attn_layer_norm")
            linear(p + "positionwise_feedforward.fc_1", F, C)
            linear(p + "positionwise_feedforward.fc_2", C, F)
            norm(p + "ff_layer_norm")
        linear("decoder.fc_out", Vt, C)
    return out


# ---------------------------------------------------------------------------------------------------------
# checkpoint
def load_state_dict(path):
    import torch

    # weights_only=True: the unpickler builds tensors and plain containers and nothing else, so a checkpoint
    # whose pickle would import a module or call a function (a crafted file can run any command that way) is
    # refused instead of run. A whole pickled nn.Module is refused too: save its state_dict.
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise ConversionError(f"checkpoint {path} does not exist")
    except Exception as e:  # pickle errors, wrong file type, and whatever weights_only refuses
        raise ConversionError(f"cannot load checkpoint {path}: torch.load(weights_only=True) refused it "
                              f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}). A checkpoint may "
                              "hold tensors and containers only: a whole pickled model, or a pickle that would run "
                              "code, is not read. Save the weights with torch.save(model.state_dict(), PATH)")
    if isinstance(obj, dict) and not any(isinstance(v, torch.Tensor) for v in obj.values()):
        for key in ("model_state_dict", "state_dict", "model"):
            if key in obj:
                note(f"using the checkpoint's '{key}' entry")
                obj = obj[key]
                break
    if not isinstance(obj, dict):
        raise ConversionError(f"checkpoint {path} holds a {type(obj).__name__}, not a state_dict "
                              "(save it with torch.save(model.state_dict(), PATH))")
    not_tensors = [k for k, v in obj.items() if not isinstance(v, torch.Tensor)]
    if not_tensors:
        raise ConversionError(f"checkpoint {path}: entries that are not tensors: {', '.join(map(str, not_tensors[:10]))}")
    if obj and all(k.startswith("module.") for k in obj):
        note("stripping the 'module.' prefix (a DataParallel checkpoint)")
        obj = {k[len("module."):]: v for k, v in obj.items()}
    return obj


def sinusoidal(maxlen, C):
    import torch

    den = torch.exp(-torch.arange(0, C, 2, dtype=torch.float64) * math.log(10000) / C)
    pos = torch.arange(0, maxlen, dtype=torch.float64).reshape(maxlen, 1)
    pe = torch.zeros((maxlen, C), dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * den)
    pe[:, 1::2] = torch.cos(pos * den[: C // 2])
    return pe


def from_scratch_config(state, src_vocab, tgt_vocab, max_length):
    """The native config of the note's Transformer, read from the state_dict's shapes (see the top)."""
    def shape(name):
        if name not in state:
            raise ConversionError(f"the checkpoint lacks '{name}', which every state_dict of the note's Transformer "
                                  f"has; is --family right? Its first names are: {', '.join(list(state)[:6])}")
        return tuple(state[name].shape)

    Vs, C = shape("Encoder.word_embedding.weight")
    Vt = shape("Decoder.word_embedding.weight")[0]
    D = shape("Encoder.layers.0.attention.query.weight")[0]
    if D <= 0 or C % D:
        raise ConversionError(f"the query projection is ({D}, {D}), which does not divide the width {C} into heads")
    F = shape("Encoder.layers.0.feed_forawrd.0.weight")[0]

    def count(prefix):
        return len({k.split(".")[2] for k in state if k.startswith(prefix) and k.split(".")[2].isdigit()})

    specials = {}
    for key, names, default in (("unk_id", ("<unk>",), 0), ("pad_id", ("<pad>",), 1),
                                ("bos_id", ("<sos>", "<bos>", "<s>"), 2), ("eos_id", ("<eos>", "</s>"), 3)):
        found = []
        for side, vocab in (("source", src_vocab), ("target", tgt_vocab)):
            ids = [i for i, t in enumerate(vocab) if t in names]
            found.append(ids[0] if ids else None)
        if found[0] is not None and found[1] is not None and found[0] != found[1]:
            raise ConversionError(f"{key}: {names[0]} is id {found[0]} in the source vocabulary and {found[1]} in the "
                                  "target one; Stepformer keeps one id for both sides (the note's make_pad_mask uses "
                                  "the source's pad id on both too)")
        specials[key] = next((i for i in found if i is not None), default)
        if all(i is None for i in found):
            note(f"warning: no {'/'.join(names)} in the vocabularies: {key} is torchtext's {default}")
    return {"d_model": C, "n_heads": C // D, "n_encoder_layers": count("Encoder.layers."),
            "n_decoder_layers": count("Decoder.layers."), "d_ff": F, "src_vocab_size": Vs, "tgt_vocab_size": Vt,
            "max_positions": max_length, "positional_encoding": "sinusoidal", "embedding_scale": "one",
            "norm_placement": "post", "encoder_final_norm": False, "decoder_final_norm": False,
            "activation": "relu", "attention": "reshape_heads", "layer_norm_eps": 1e-5, "bias": True,
            "tie_output_embedding": False, "share_embeddings": False, **specials}


def check_state_dict(state, family, cfg):
    """Returns the tensors to write, in the family's order. Raises on missing tensors, wrong shapes, non-float
    dtypes, NaN/Inf; warns about and drops tensors the family does not know."""
    import torch

    expected = expected_tensors(family, cfg)
    missing = [f"{name} {list(shape)}" for name, shape in expected.items() if name not in state]
    wrong = [f"{name}: expected {list(shape)}, found {list(state[name].shape)}"
             for name, shape in expected.items() if name in state and tuple(state[name].shape) != shape]
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing tensor(s):\n    " + "\n    ".join(missing[:30]))
    if wrong:
        problems.append(f"{len(wrong)} tensor(s) of the wrong shape:\n    " + "\n    ".join(wrong[:30]))
    if problems:
        hint = ""
        if missing and len(missing) == len(expected):
            hint = (f"\n  none of the {family} names is in the checkpoint: is --family right? The checkpoint's first "
                    f"names are: {', '.join(list(state)[:6])}")
        raise ConversionError("the checkpoint does not match the family and config:\n  " + "\n  ".join(problems) + hint)

    for name in state:
        if name in expected:
            continue
        if family == "pytorch-tutorial" and name == "positional_encoding.pos_embedding":
            pe = state[name]
            if pe.dim() != 3 or pe.shape[1] != 1 or pe.shape[2] != cfg["d_model"]:
                raise ConversionError(f"{name}: expected (maxlen, 1, {cfg['d_model']}), found {list(pe.shape)}")
            if pe.shape[0] < cfg["max_positions"]:
                raise ConversionError(f"{name} covers {pe.shape[0]} positions, fewer than max_positions "
                                      f"({cfg['max_positions']})")
            error = (pe[:, 0, :].double() - sinusoidal(pe.shape[0], cfg["d_model"])).abs().max().item()
            if error > 1e-3:
                raise ConversionError(f"{name} is not the sinusoidal encoding (max difference {error:.3g}); "
                                      "Stepformer computes sinusoidal positions itself")
            note(f"dropping {name} {list(pe.shape)}: the sinusoidal encoding, which Stepformer computes "
                 f"(max difference {error:.1e})")
            continue
        note(f"warning: tensor '{name}' {list(state[name].shape)} is not part of family '{family}': dropped")

    out = {}
    for name in expected:
        t = state[name]
        if not t.is_floating_point():
            raise ConversionError(f"tensor '{name}' has dtype {t.dtype}, expected a floating-point tensor")
        t = t.detach().to(torch.float32).contiguous()
        bad = ~torch.isfinite(t)
        if bad.any():
            index = int(bad.flatten().nonzero()[0])
            kind = "NaN" if math.isnan(t.flatten()[index].item()) else "Inf"
            raise ConversionError(f"tensor '{name}' holds {kind} at flat index {index} "
                                  f"({int(bad.sum())} non-finite values)")
        out[name] = t
    return out


# ---------------------------------------------------------------------------------------------------------
# safetensors writer
def write_model(path, tensors, metadata, dtype):
    import torch

    torch_dtype = {"F32": torch.float32, "F16": torch.float16}[dtype]
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, t in tensors.items():
        if dtype == "F16" and t.numel() and t.abs().max().item() > 65504:
            raise ConversionError(f"tensor '{name}' holds values beyond the F16 range (65504): use --dtype f32")
        data = t.to(torch_dtype).numpy().astype("<f4" if dtype == "F32" else "<f2").tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    head += b" " * ((8 - len(head) % 8) % 8)  # the data region starts 8-byte aligned

    directory = os.path.dirname(os.path.abspath(path))
    temp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temp, "wb") as f:
            f.write(struct.pack("<Q", len(head)))
            f.write(head)
            for b in blobs:
                f.write(b)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except OSError as e:
        if os.path.exists(temp):
            os.unlink(temp)
        raise ConversionError(f"cannot write {path}: {e.strerror}")
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return 8 + len(head) + offset


# ---------------------------------------------------------------------------------------------------------
def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", required=True, choices=["pytorch-tutorial", "seq2seq-tutorial", "from-scratch"])
    p.add_argument("--checkpoint", required=True, help="a state_dict saved with torch.save(model.state_dict(), PATH)")
    p.add_argument("--config", help="CONFIG.json with the native config keys (from-scratch: optional, read from the "
                                    "shapes)")
    p.add_argument("--max-length", type=int, default=140,
                   help="from-scratch: the note's max_length, the longest sequence (default 140)")
    p.add_argument("--src-vocab", required=True, help="source vocabulary: one token per line, line number = id")
    p.add_argument("--tgt-vocab", required=True, help="target vocabulary: one token per line, line number = id")
    p.add_argument("--out", required=True, help="the model file to write (.safetensors)")
    p.add_argument("--dtype", choices=["f32", "f16"], default="f32", help="storage of the weights (default f32)")
    tok = p.add_argument_group("tokenizer settings (how the training data were tokenized)")
    tok.add_argument("--src-lang", default="", help="source language (en, de, fr, ...): Moses apostrophe rules")
    tok.add_argument("--tgt-lang", default="", help="target language")
    tok.add_argument("--no-lowercase", action="store_true", help="the training data kept their case")
    tok.add_argument("--no-split-punctuation", action="store_true", help="the data were split on spaces only")
    tok.add_argument("--no-moses-escape", action="store_true", help="the data have ' and \" rather than &apos; &quot;")
    tok.add_argument("--no-bos-eos", action="store_true", help="the source was not wrapped in <bos> ... <eos>")
    prov = p.add_argument_group("provenance (recorded in the file, shown by stepformer-cli info)")
    prov.add_argument("--dataset", help="e.g. 'Multi30k de-en (train 29k)'")
    prov.add_argument("--train-command", help="the exact command that trained the model")
    prov.add_argument("--score", action="append", default=[], metavar="NAME=VALUE", help="e.g. bleu=35.2 (repeatable)")
    prov.add_argument("--provenance", metavar="JSON", help="a JSON file with further provenance fields")
    return p.parse_args(argv)


def ask_languages(args, stdin=None):
    """The model's two languages, which the app names on every view ("German: ...", "the German sentence"): from
    --src-lang and --tgt-lang, else asked for at a terminal; without a terminal the file says none, and the app
    calls them "source" and "target"."""
    stdin = stdin or sys.stdin
    for attr, side in (("src_lang", "source"), ("tgt_lang", "target")):
        if getattr(args, attr):
            continue
        if stdin.isatty():
            print(f"The {side} language of the model (a code such as de, en, fr; Enter to leave it unnamed): ",
                  end="", file=sys.stderr, flush=True)
            answer = stdin.readline().strip()
            if answer and not re.fullmatch(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})?", answer):
                raise ConversionError(f"'{answer}' is not a language code (two or three letters: de, en, fra)")
            setattr(args, attr, answer)
        if not getattr(args, attr):
            note(f"warning: no {side} language (--{attr.replace('_', '-')}): the app will call it the "
                 f"'{side}' language; name it with --{attr.replace('_', '-')} CODE (e.g. de, en)")


def main(argv=None):
    args = parse_args(argv)
    try:
        ask_languages(args)
        src_vocab = read_vocab(args.src_vocab, "source")
        tgt_vocab = read_vocab(args.tgt_vocab, "target")
        if args.family == "from-scratch":
            if not 1 <= args.max_length <= 65536:
                raise ConversionError(f"--max-length {args.max_length}: expected 1 to 65536")
            state = load_state_dict(args.checkpoint)
            inferred = from_scratch_config(state, src_vocab, tgt_vocab, args.max_length)
            cfg = read_config("(read from the checkpoint's shapes)", len(src_vocab), len(tgt_vocab), args.family,
                              raw=inferred)
            if args.config:
                given = read_config(args.config, len(src_vocab), len(tgt_vocab), args.family)
                differ = [f"{k}: the config says {json.dumps(given[k])}, the checkpoint has {json.dumps(cfg[k])}"
                          for k in cfg if k != "max_positions" and given[k] != cfg[k]]
                if differ:
                    raise ConversionError(f"config {args.config} does not match the checkpoint:\n  " +
                                          "\n  ".join(differ))
                cfg = given
        elif not args.config:
            raise ConversionError(f"--config is needed for family {args.family}")
        else:
            cfg = read_config(args.config, len(src_vocab), len(tgt_vocab), args.family)

        provenance = {}
        if args.provenance:
            try:
                with open(args.provenance, encoding="utf-8") as f:
                    provenance = json.load(f)
            except (OSError, json.JSONDecodeError) as e:
                raise ConversionError(f"cannot read provenance {args.provenance}: {e}")
            if not isinstance(provenance, dict):
                raise ConversionError(f"provenance {args.provenance}: expected a JSON object")
        if args.dataset:
            provenance["dataset"] = args.dataset
        if args.train_command:
            provenance["command"] = args.train_command
        scores = dict(provenance.get("scores", {}))
        for s in args.score:
            name, eq, value = s.partition("=")
            if not eq or not name:
                raise ConversionError(f"--score '{s}': expected NAME=VALUE")
            try:
                scores[name] = float(value)
            except ValueError:
                scores[name] = value
        if scores:
            provenance["scores"] = scores

        if args.family != "from-scratch":
            state = load_state_dict(args.checkpoint)
        tensors = check_state_dict(state, args.family, cfg)

        import torch

        with open(args.checkpoint, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        provenance["converted_from"] = {
            "checkpoint": os.path.basename(args.checkpoint), "sha256": digest, "family": args.family,
            "converter": "tools/convert_pytorch.py", "torch": torch.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        tokenizer = {"lowercase": not args.no_lowercase, "split_punctuation": not args.no_split_punctuation,
                     "moses_escape": not args.no_moses_escape, "normalize_punctuation": True,
                     "source_language": args.src_lang, "target_language": args.tgt_lang,
                     "add_bos_eos": not args.no_bos_eos}
        specials = {k: (src_vocab[cfg[k]], tgt_vocab[cfg[k]]) for k in ("pad_id", "bos_id", "eos_id", "unk_id")}
        for key, (s, t) in specials.items():
            if not (s.startswith("<") and t.startswith("<")):
                note(f"warning: {key} {cfg[key]} is {s!r} / {t!r} in the vocabularies, which does not look like a "
                     "special token: check the ids in the config")
        metadata = {
            "format": "stepformer-model", "format_version": "1", "family": args.family,
            "config": json.dumps(cfg), "src_vocab": json.dumps(src_vocab, ensure_ascii=False),
            "tgt_vocab": json.dumps(tgt_vocab, ensure_ascii=False), "tokenizer": json.dumps(tokenizer),
            "provenance": json.dumps(provenance, ensure_ascii=False),
        }
        size = write_model(args.out, tensors, metadata, args.dtype.upper())
    except ConversionError as e:
        print(f"convert_pytorch.py: error: {e}", file=sys.stderr)
        return 1
    params = sum(t.numel() for t in tensors.values())
    print(f"wrote {args.out}: family {args.family}, {len(tensors)} tensors, {params} parameters, "
          f"vocabularies {len(src_vocab)} / {len(tgt_vocab)}, {size} bytes ({args.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
