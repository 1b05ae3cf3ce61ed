#!/usr/bin/python3
"""Writes tests/fixtures/subwords/multi30k_bpe.json: what python3-sentencepiece (Debian's, the library's own Python
binding) learns and splits, for tests/unit/test_subwords.cpp to hold `stepformer-cli subwords` (train/subwords.h)
to.

Development time only (run with /usr/bin/python3; the file it writes is committed, so CI needs no Python). For
each size, a BPE vocabulary learned on Multi30k's train.lc.norm.tok.{de,en} (both languages, every line in order,
joined by single spaces as the C++ reader joins its tokens) with the options train/subwords.cpp gives the library:
    sha256        of the serialized model (the .spm file's bytes)
    pieces        "de"/"en": sha256 of every line of test_2016_flickr.lc.norm.tok.LANG split into pieces
                  (one line of space-separated pieces per sentence, joined with newlines), the line count,
                  and the first 5 lines' pieces as they are (to show a difference)
and the sha256 of the files read, so that a test on other data says so instead of failing on the pieces.
"""
import hashlib
import io
import json
import os
import sys

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures", "subwords", "multi30k_bpe.json")
SIZES = (1000, 8000)


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return [" ".join(l.split()) for l in f if l.split()]


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def main():
    tok = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data/multi30k/tok"
    train = {lang: os.path.join(tok, "train.lc.norm.tok." + lang) for lang in ("de", "en")}
    test = {lang: os.path.join(tok, "test_2016_flickr.lc.norm.tok." + lang) for lang in ("de", "en")}
    out = {"files": {os.path.basename(p): hashlib.sha256(open(p, "rb").read()).hexdigest()
                     for p in list(train.values()) + list(test.values())}, "sizes": {}}
    corpus = lines_of(train["de"]) + lines_of(train["en"])
    for size in SIZES:
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(corpus), model_writer=model, model_type="bpe", vocab_size=size,
            character_coverage=1.0, unk_id=0, pad_id=1, bos_id=2, eos_id=3, unk_piece="<unk>", pad_piece="<pad>",
            bos_piece="<bos>", eos_piece="<eos>", input_sentence_size=0, shuffle_input_sentence=False,
            num_threads=1, minloglevel=2)
        proto = model.getvalue()
        sp = spm.SentencePieceProcessor(model_proto=proto)
        entry = {"sha256": hashlib.sha256(proto).hexdigest(), "pieces": {}}
        for lang, path in test.items():
            split = [" ".join(sp.encode(line, out_type=str)) for line in lines_of(path)]
            entry["pieces"][lang] = {"sha256": sha("\n".join(split)), "lines": len(split), "first": split[:5]}
        out["sizes"][str(size)] = entry
        print(size, entry["sha256"][:16], {k: v["lines"] for k, v in entry["pieces"].items()})
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
