#!/usr/bin/python3
"""Tests of tools/ngram_baseline.py (run by ctest as ngram_baseline_python; standard library only).

The probabilities of a two-sentence corpus are worked out by hand below; every history's distribution must sum
to 1 over the predicted tokens W (the vocabulary without <pad> and <bos>), for plain and modified Kneser-Ney.
"""
import io
import json
import math
import os
import struct
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import ngram_baseline as kn  # noqa: E402

SPECIALS = ["<unk>", "<pad>", "<bos>", "<eos>"]


def vocabulary(words):
    return kn.Vocabulary(SPECIALS + words, unk_id=0, pad_id=1, bos_id=2, eos_id=3)


def write_model_file(path, tokens):
    """A safetensors file as a decoder-only model file is, as far as the script reads it: no tensors, the
    metadata's tgt_vocab and config."""
    meta = {"tgt_vocab": json.dumps(tokens),
            "config": json.dumps({"stacks": "decoder_only", "unk_id": 0, "pad_id": 1, "bos_id": 2, "eos_id": 3})}
    header = json.dumps({"__metadata__": meta}).encode("utf-8")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)


class HandWorked(unittest.TestCase):
    """Corpus "a b" and "b", D = 0.75, read as  <bos> <bos> a b <eos>  and  <bos> <bos> b <eos>  (B = <bos>, E = <eos>).

    trigrams          (B B a) (B a b) (a b E) (B B b) (B b E), each once
    N1+(. v w)        (B a) 1, (a b) 1, (b E) 2 (after a and after B), (B b) 1
    N1+(. w)          a 1, b 2, E 1, <unk> 0; their sum 4, three types: uniform mass 3 * 0.75 = 2.25
    W                 <unk> <eos> a b: |W| = 4

    P1(a)    = (1 - .75 + 2.25/4) / 4                         = 0.203125
    P1(b)    = (2 - .75 + 2.25/4) / 4                         = 0.453125
    P1(E)    = P1(a)                                          = 0.203125
    P1(<unk>)= (2.25/4) / 4                                   = 0.140625      (sum 1)
    P2(a|B)  = (1 - .75 + 2 * .75 * P1(a)) / 2                = 0.27734375    (B is followed by a and by b)
    P2(b|a)  = (1 - .75 + .75 * P1(b)) / 1                    = 0.58984375
    P2(E|b)  = (2 - .75 + .75 * P1(E)) / 2                    = 0.701171875
    P3(a|B B)= (1 - .75 + 2 * .75 * P2(a|B)) / 2              = 0.3330078125
    P3(b|B a)= (1 - .75 + .75 * P2(b|a)) / 1                  = 0.6923828125
    P3(E|a b)= (1 - .75 + .75 * P2(E|b)) / 1                  = 0.77587890625
    """

    def setUp(self):
        self.v = vocabulary(["a", "b"])
        self.m = kn.KneserNeyTrigram([["a", "b"], ["b"]], self.v, discount=0.75)

    def test_probabilities_by_hand(self):
        m = self.m
        self.assertAlmostEqual(m.p1("a"), 0.203125, places=12)
        self.assertAlmostEqual(m.p1("b"), 0.453125, places=12)
        self.assertAlmostEqual(m.p1("<eos>"), 0.203125, places=12)
        self.assertAlmostEqual(m.p1("<unk>"), 0.140625, places=12)
        self.assertAlmostEqual(m.p2("a", "<bos>"), 0.27734375, places=12)
        self.assertAlmostEqual(m.p2("b", "a"), 0.58984375, places=12)
        self.assertAlmostEqual(m.p2("<eos>", "b"), 0.701171875, places=12)
        self.assertAlmostEqual(m.p3("a", "<bos>", "<bos>"), 0.3330078125, places=12)
        self.assertAlmostEqual(m.p3("b", "<bos>", "a"), 0.6923828125, places=12)
        self.assertAlmostEqual(m.p3("<eos>", "a", "b"), 0.77587890625, places=12)
        # A history never seen ("b a"): all of its mass goes to the bigram level.
        self.assertAlmostEqual(m.p3("b", "b", "a"), m.p2("b", "a"), places=12)

    def test_sentence_score_and_unknown_words(self):
        # "a b": the three predictions above; "c" is outside the vocabulary: scored as <unk>.
        tokens, nll = self.m.score([["a", "b"]])
        self.assertEqual(tokens, 3)
        self.assertAlmostEqual(nll, -math.log(0.3330078125 * 0.6923828125 * 0.77587890625), places=10)
        tokens, nll = self.m.score([["c"]])
        self.assertEqual(tokens, 2)
        want = -math.log(self.m.p3("<unk>", "<bos>", "<bos>")) - math.log(self.m.p3("<eos>", "<bos>", "<unk>"))
        self.assertAlmostEqual(nll, want, places=12)
        self.assertGreater(self.m.p3("<unk>", "<bos>", "<bos>"), 0.0)

    def test_every_history_sums_to_one(self):
        self.assertEqual(sorted(self.m.words), ["<eos>", "<unk>", "a", "b"])
        histories = [(u, v) for u in ["<bos>", "<unk>", "a", "b", "<eos>"] for v in ["<bos>", "<unk>", "a", "b"]]
        for u, v in histories:
            total = sum(self.m.p3(w, u, v) for w in self.m.words)
            self.assertAlmostEqual(total, 1.0, places=12, msg=f"history {u} {v}")


class Normalisation(unittest.TestCase):
    """On a larger random corpus (counts of counts 1..4 all present), plain and modified KN both sum to 1."""

    def test_plain_and_modified(self):
        import random
        rng = random.Random(7)
        # Zipf-like word frequencies, as in text: many rare words, so every order has counts of 1 to 4. The
        # vocabulary leaves the last 20 out: they are <unk>.
        pool = [f"w{i}" for i in range(120)]
        weights = [1.0 / (i + 1) for i in range(120)]
        sentences = [rng.choices(pool, weights, k=rng.randint(1, 8)) for _ in range(400)]
        words = pool[:100]
        v = vocabulary(words)
        for modified in (False, True):
            m = kn.KneserNeyTrigram(sentences, v, modified=modified)
            if modified:
                for d in (m.d1, m.d2, m.d3):
                    # each discount below the count it discounts: no count goes negative
                    self.assertTrue(0 < d[1] < 1 and 0 < d[2] < 2 and 0 < d[3] < 3, d)
            contexts = ["<bos>", "<unk>", "w0", "w5", "w99", "<eos>"]
            for u in contexts:
                for v_ in contexts[:-1]:
                    total = sum(m.p3(w, u, v_) for w in m.words)
                    self.assertAlmostEqual(total, 1.0, places=10, msg=f"modified={modified} history {u} {v_}")


class CommandLine(unittest.TestCase):
    def test_reads_the_vocabulary_from_the_model_file_and_prints_the_perplexity(self):
        with tempfile.TemporaryDirectory() as d:
            model = os.path.join(d, "m.safetensors")
            write_model_file(model, SPECIALS + ["a", "b"])
            train, test = os.path.join(d, "train.txt"), os.path.join(d, "test.txt")
            with open(train, "w") as f:
                f.write("a b\nb\n")
            with open(test, "w") as f:
                f.write("a b\n")
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(kn.main(["--model", model, "--train", train, "--test", test]), 0)
            text = out.getvalue()
            self.assertIn("tokens scored 3", text)
            want = math.exp(-math.log(0.3330078125 * 0.6923828125 * 0.77587890625) / 3)
            self.assertIn(f"perplexity {want:.2f}", text)


if __name__ == "__main__":
    unittest.main()
