#!/usr/bin/python3
"""Writes the committed model-file fixtures: tests/fixtures/models/<name>.safetensors and <name>.expected.json.

Development time only (Debian's python3-torch: run with /usr/bin/python3 from the repository root). For each case
it builds a tiny random model of one PyTorch family with tests/reference/families.py, saves its state_dict with
torch.save exactly as a tutorial user would, writes the vocabulary files and CONFIG.json, runs
tools/convert_pytorch.py on them (the command is printed), and records in <name>.expected.json the config, the
vocabularies, sum(p.numel() for p in model.parameters()) and a dozen weight values read straight from the
PyTorch module, each with the ModelWeights member it must land in (tests/unit/test_model_file.cpp checks them,
including the split of in_proj_weight into W_q, W_k, W_v).
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT_DIR = os.path.join(ROOT, "tests", "fixtures", "models")
sys.path.insert(0, HERE)
import families  # noqa: E402

SPECIALS = ["<unk>", "<pad>", "<bos>", "<eos>"]
# Frequent Multi30k words (tok/train.lc.norm.tok.{de,en}), so the fixtures look like the real thing.
DE_WORDS = ["ein", ".", "einem", "in", ",", "eine", "und", "mit", "auf", "mann", "einer", "der", "frau", "die",
            "zwei", "einen", "im", "an", "von", "&quot;", "l&apos;"]
EN_WORDS = ["a", ".", "in", "the", "on", "man", "is", "and", "of", "with", "woman", ",", "two", "are", "people",
            "at", "to", "wearing", "shirt", "&apos;s", "&quot;", "young"]

CASES = [
    ("pytorch_tutorial_tiny", "pytorch-tutorial",
     {"d_model": 16, "n_heads": 4, "n_encoder_layers": 2, "n_decoder_layers": 2, "d_ff": 32, "max_positions": 64,
      "positional_encoding": "sinusoidal", "encoder_final_norm": True, "decoder_final_norm": True}),
    ("pytorch_tutorial_tiny_norm_first", "pytorch-tutorial",
     {"d_model": 16, "n_heads": 2, "n_encoder_layers": 1, "n_decoder_layers": 2, "d_ff": 24, "max_positions": 32,
      "positional_encoding": "sinusoidal", "encoder_final_norm": True, "decoder_final_norm": True,
      "norm_placement": "pre", "activation": "gelu", "layer_norm_eps": 1e-6}),
    ("seq2seq_tutorial_tiny", "seq2seq-tutorial",
     {"d_model": 16, "n_heads": 4, "n_encoder_layers": 2, "n_decoder_layers": 2, "d_ff": 32, "max_positions": 20,
      "positional_encoding": "learned"}),
    # The study note's Transformer(embed_size=16, heads=4, num_layers=2, forward_expansion=2, max_length=50),
    # converted without --config (everything from the shapes) and with the note's <sos> in its vocabularies.
    ("from_scratch_tiny", "from-scratch",
     {"d_model": 16, "n_heads": 4, "n_encoder_layers": 2, "n_decoder_layers": 2, "d_ff": 32, "max_positions": 50}),
]
NOTE_SPECIALS = ["<unk>", "<pad>", "<sos>", "<eos>"]


def checks_for(family, model, cfg):
    """(tensor name, index in it, ModelWeights member, row, col) for a dozen values, then their values."""
    C = cfg["d_model"]
    sd = model.state_dict()
    picks = []
    if family == "pytorch-tutorial":
        picks += [
            ("src_tok_emb.embedding.weight", (5, 3), "src_embedding", 5, 3),
            ("tgt_tok_emb.embedding.weight", (7, 15), "tgt_embedding", 7, 15),
            # in_proj_weight (3C, C) = [W_q; W_k; W_v]
            ("transformer.encoder.layers.0.self_attn.in_proj_weight", (2, 9), "encoder_layers.0.self_attn.q.weight", 2, 9),
            ("transformer.encoder.layers.0.self_attn.in_proj_weight", (C + 4, 1), "encoder_layers.0.self_attn.k.weight", 4, 1),
            ("transformer.decoder.layers.1.multihead_attn.in_proj_weight", (2 * C + 11, 6), "decoder_layers.1.cross_attn.v.weight", 11, 6),
            ("transformer.decoder.layers.1.multihead_attn.in_proj_bias", (C + 3,), "decoder_layers.1.cross_attn.k.bias", 0, 3),
            ("transformer.decoder.layers.0.self_attn.out_proj.weight", (8, 2), "decoder_layers.0.self_attn.out.weight", 8, 2),
            ("transformer.encoder.layers.0.linear1.weight", (10, 4), "encoder_layers.0.ffn.fc1.weight", 10, 4),
            ("transformer.decoder.layers.1.linear2.bias", (12,), "decoder_layers.1.ffn.fc2.bias", 0, 12),
            ("transformer.decoder.layers.0.norm2.weight", (5,), "decoder_layers.0.cross_attn_norm.gamma", 0, 5),
            ("transformer.decoder.layers.0.norm3.bias", (6,), "decoder_layers.0.ffn_norm.beta", 0, 6),
            ("transformer.encoder.norm.weight", (1,), "encoder_norm.gamma", 0, 1),
            ("transformer.decoder.norm.bias", (14,), "decoder_norm.beta", 0, 14),
            ("generator.weight", (20, 7), "generator.weight", 20, 7),
            ("generator.bias", (3,), "generator.bias", 0, 3),
        ]
    elif family == "from-scratch":
        picks += [
            ("Encoder.word_embedding.weight", (5, 3), "src_embedding", 5, 3),
            ("Decoder.word_embedding.weight", (9, 15), "tgt_embedding", 9, 15),
            # one (D, D) map per Q, K, V shared by every head (D = 4)
            ("Encoder.layers.1.attention.key.weight", (3, 1), "encoder_layers.1.self_attn.k.weight", 3, 1),
            ("Encoder.layers.0.attention.fc_out.bias", (13,), "encoder_layers.0.self_attn.out.bias", 0, 13),
            ("Encoder.layers.0.feed_forawrd.0.weight", (30, 5), "encoder_layers.0.ffn.fc1.weight", 30, 5),
            ("Encoder.layers.1.norm2.weight", (2,), "encoder_layers.1.ffn_norm.gamma", 0, 2),
            ("Decoder.layers.0.attention.query.weight", (2, 3), "decoder_layers.0.self_attn.q.weight", 2, 3),
            ("Decoder.layers.0.norm.bias", (7,), "decoder_layers.0.self_attn_norm.beta", 0, 7),
            ("Decoder.layers.1.encoder_block.attention.value.weight", (0, 2), "decoder_layers.1.cross_attn.v.weight", 0, 2),
            ("Decoder.layers.1.encoder_block.norm1.weight", (9,), "decoder_layers.1.cross_attn_norm.gamma", 0, 9),
            ("Decoder.layers.1.encoder_block.feed_forawrd.2.bias", (12,), "decoder_layers.1.ffn.fc2.bias", 0, 12),
            ("Decoder.layers.0.encoder_block.norm2.bias", (6,), "decoder_layers.0.ffn_norm.beta", 0, 6),
            ("fc_out.weight", (21, 7), "generator.weight", 21, 7),
            ("fc_out.bias", (3,), "generator.bias", 0, 3),
        ]
    else:
        picks += [
            ("encoder.tok_embedding.weight", (5, 3), "src_embedding", 5, 3),
            ("encoder.pos_embedding.weight", (19, 2), "src_positions", 19, 2),
            ("decoder.tok_embedding.weight", (9, 15), "tgt_embedding", 9, 15),
            ("decoder.pos_embedding.weight", (4, 8), "tgt_positions", 4, 8),
            ("encoder.layers.1.self_attention.fc_k.weight", (4, 1), "encoder_layers.1.self_attn.k.weight", 4, 1),
            ("encoder.layers.0.self_attention.fc_o.bias", (13,), "encoder_layers.0.self_attn.out.bias", 0, 13),
            ("decoder.layers.1.encoder_attention.fc_v.weight", (11, 6), "decoder_layers.1.cross_attn.v.weight", 11, 6),
            ("decoder.layers.0.self_attention.fc_q.bias", (7,), "decoder_layers.0.self_attn.q.bias", 0, 7),
            ("decoder.layers.1.positionwise_feedforward.fc_1.weight", (30, 5), "decoder_layers.1.ffn.fc1.weight", 30, 5),
            ("encoder.layers.1.ff_layer_norm.weight", (2,), "encoder_layers.1.ffn_norm.gamma", 0, 2),
            ("decoder.layers.0.enc_attn_layer_norm.bias", (9,), "decoder_layers.0.cross_attn_norm.beta", 0, 9),
            ("decoder.layers.1.self_attn_layer_norm.weight", (0,), "decoder_layers.1.self_attn_norm.gamma", 0, 0),
            ("decoder.fc_out.weight", (21, 7), "generator.weight", 21, 7),
            ("decoder.fc_out.bias", (3,), "generator.bias", 0, 3),
        ]
    return [{"tensor": name, "index": list(index), "member": member, "row": row, "col": col,
             "value": float(sd[name][index].item())} for name, index, member, row, col in picks]


def run(cmd):
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    only = set(sys.argv[1:])  # case names: write only these (all without)
    for seed, (name, family, cfg) in enumerate(CASES):
        if only and name not in only:
            continue
        specials = NOTE_SPECIALS if family == "from-scratch" else SPECIALS
        src_vocab = specials + DE_WORDS
        tgt_vocab = specials + EN_WORDS
        torch.manual_seed(1234 + seed)
        sized = dict(cfg, src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab))
        # the tutorial's PositionalEncoding buffer (maxlen 5000 there) goes into the state_dict; the converter
        # checks that it is sinusoidal and drops it
        extra = {"pe_maxlen": 100} if family == "pytorch-tutorial" else {}
        model = families.build(family, sized, **extra)
        with torch.no_grad():  # random norms too, so every value checked is distinctive
            for pname, p in model.named_parameters():
                if "norm" in pname:
                    p.uniform_(-1.0, 1.0)
        with tempfile.TemporaryDirectory() as tmp:
            checkpoint = os.path.join(tmp, f"{name}.pt")
            torch.save(model.state_dict(), checkpoint)
            config_path = os.path.join(tmp, "config.json")
            with open(config_path, "w") as f:
                json.dump(cfg, f, indent=2)  # vocabulary sizes come from the vocabulary files
            for path, vocab in ((os.path.join(tmp, "src.txt"), src_vocab), (os.path.join(tmp, "tgt.txt"), tgt_vocab)):
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(vocab) + "\n")
            out = os.path.join(OUT_DIR, f"{name}.safetensors")
            how = (["--max-length", str(cfg["max_positions"])] if family == "from-scratch" else ["--config", config_path])
            run(["/usr/bin/python3", os.path.join(ROOT, "tools", "convert_pytorch.py"), "--family", family,
                 "--checkpoint", checkpoint, *how, "--src-vocab", os.path.join(tmp, "src.txt"),
                 "--tgt-vocab", os.path.join(tmp, "tgt.txt"), "--out", out, "--src-lang", "de", "--tgt-lang", "en",
                 "--dataset", "none: random weights (tests/reference/make_model_fixtures.py)",
                 "--train-command", "none", "--score", "bleu=0"])
        full = families.full_config(sized)
        if family == "from-scratch":
            full = families.from_scratch_config(16, 4, 2, 2, len(src_vocab), len(tgt_vocab), cfg["max_positions"])
        expected = {
            "family": family, "config": full, "src_vocab": src_vocab, "tgt_vocab": tgt_vocab,
            "parameter_count": sum(p.numel() for p in model.parameters()),
            "provenance": {"dataset": "none: random weights (tests/reference/make_model_fixtures.py)"},
            "tokenizer": {"source_language": "de", "target_language": "en"},
            "checks": checks_for(family, model, full),
        }
        with open(os.path.join(OUT_DIR, f"{name}.expected.json"), "w") as f:
            json.dump(expected, f, indent=1)
            f.write("\n")
        print(f"{name}: {os.path.getsize(out)} bytes, {expected['parameter_count']} parameters")


if __name__ == "__main__":
    main()
