#!/usr/bin/python3
"""Writes tests/fixtures/bleu_nltk.json: corpora and nltk's corpus_bleu on them (no smoothing), the independent
reference for core/train/bleu.cpp. Development time only; run with Debian's python3-nltk:
    /usr/bin/python3 tests/reference/make_bleu_fixtures.py
"""
import json
import os
import random

from nltk.translate.bleu_score import corpus_bleu

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures", "bleu_nltk.json")
DATA = "/work/shared/data/multi30k/tok"

rng = random.Random(7)
cases = []

# Real references (first 200 test sentences) against noisy copies: drop, swap and replace words.
with open(os.path.join(DATA, "test_2016_flickr.lc.norm.tok.en")) as f:
    refs = [line.split() for line in f][:200]
vocab = sorted({w for r in refs for w in r})
for noise in (0.0, 0.1, 0.3, 0.6):
    hyps = []
    for r in refs:
        h = []
        for w in r:
            x = rng.random()
            if x < noise / 3:
                continue  # drop
            if x < 2 * noise / 3:
                h.append(rng.choice(vocab))  # replace
            else:
                h.append(w)
            if rng.random() < noise / 3 and len(h) > 1:
                h[-1], h[-2] = h[-2], h[-1]  # swap
        hyps.append(h)
    cases.append({"name": f"noise_{noise}", "hypotheses": hyps, "references": refs})

# Short hypotheses (brevity penalty), repeated words (clipping), and one empty hypothesis.
cases.append({"name": "brevity_and_clipping",
              "hypotheses": [r[: max(1, len(r) // 2)] for r in refs[:50]] + [["a"] * 7, []],
              "references": refs[:50] + [["a", "man", "in", "a", "red", "shirt", "."], ["two", "dogs", "."]]})
# A corpus without any 4-gram match: BLEU is 0 without smoothing.
cases.append({"name": "no_four_gram", "hypotheses": [["a", "b", "c"], ["d"]],
              "references": [["a", "b", "c", "d"], ["d", "e"]]})

for c in cases:
    c["nltk_bleu"] = corpus_bleu([[r] for r in c["references"]], c["hypotheses"])
with open(OUT, "w") as f:
    json.dump({"generator": "tests/reference/make_bleu_fixtures.py (nltk corpus_bleu, weights 1/4, no smoothing)",
               "cases": cases}, f)
print("wrote", OUT, [(c["name"], round(c["nltk_bleu"], 6)) for c in cases])
