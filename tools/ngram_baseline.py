#!/usr/bin/python3
"""A count-based baseline for Stepformer's decoder-only models: an interpolated Kneser-Ney trigram model.

    /usr/bin/python3 tools/ngram_baseline.py --model assets/models/gpt-en.safetensors \
        --train ../shared/data/multi30k/tok/train.lc.norm.tok.en \
        --test ../shared/data/multi30k/tok/test_2016_flickr.lc.norm.tok.en

Python 3's standard library only. It scores the test file exactly as `stepformer-cli eval MODEL --text FILE`
scores a decoder-only model, so the two perplexities compare:

  vocabulary   the model file's own: the JSON array "tgt_vocab" in its safetensors __metadata__ (the header is
               an 8-byte little-endian length, then that many bytes of JSON), special ids from its "config";
               a word outside it is <unk>, in training and in testing (as the trainer maps it)
  sentences    one per line, tokens split at spaces; each is read as <bos> <bos> w1 .. wn and every word and
               the final <eos> is predicted: the first word from the start context alone (the two <bos> are
               the trigram's history there), the <bos> never predicted
  perplexity   exp(-(1/N) sum ln p(token | history)) over those N predicted tokens (<unk> and <eos> included)

The model (Chen and Goodman 1998, "An empirical study of smoothing techniques for language modeling", section
3.5 for interpolated Kneser-Ney, 3.5.1 modified) predicts the set W = the vocabulary without <pad> and <bos>:

  P3(w | u v) = max(c(u v w) - D3(c), 0) / c(u v .)  +  gamma3(u v) P2(w | v)          (raw trigram counts)
  P2(w | v)   = max(N1+(. v w) - D2(n), 0) / N1+(. v .)  +  gamma2(v) P1(w)             (continuation counts)
  P1(w)       = max(N1+(. w) - D1(n), 0) / N1+(. .)  +  gamma1 / |W|                     (continuation counts)

  gamma(h)    = the discounted mass: sum over the w seen after h of D(count of h w), divided by h's total
  A history never seen passes all of its mass down (gamma = 1). N1+(. v w) is the number of distinct words u
  with c(u v w) > 0, N1+(. v .) their sum over w, N1+(. w) the distinct v with N1+(. v w) > 0.

  --discount D  plain interpolated Kneser-Ney: one discount D (default 0.75) at every order and count.
  --modified    modified Kneser-Ney: three discounts per order from that order's counts of counts n1..n4:
                Y = n1 / (n1 + 2 n2), D1 = 1 - 2Y n2/n1, D2 = 2 - 3Y n3/n2, D3+ = 3 - 4Y n4/n3.

Each distribution sums to 1 over W for every history (tests/tools/test_ngram_baseline.py checks it, and
the probabilities of a tiny corpus by hand).
"""
import argparse
import json
import math
import struct
import sys
from collections import defaultdict


def read_safetensors_metadata(path):
    """The __metadata__ object of a safetensors file (a dict of strings)."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: too short for a safetensors file")
        (length,) = struct.unpack("<Q", raw)
        if length > 100_000_000:
            raise ValueError(f"{path}: header length {length} is not plausible")
        header = json.loads(f.read(length).decode("utf-8"))
    meta = header.get("__metadata__")
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: no __metadata__ in the header")
    return meta


class Vocabulary:
    """A model's target vocabulary: tokens by id, with its special tokens."""

    def __init__(self, tokens, unk_id, pad_id, bos_id, eos_id):
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.unk, self.pad, self.bos, self.eos = (self.tokens[i] for i in (unk_id, pad_id, bos_id, eos_id))

    @staticmethod
    def from_model(path):
        meta = read_safetensors_metadata(path)
        if "tgt_vocab" not in meta:
            raise ValueError(f"{path}: its metadata has no tgt_vocab (a decoder-only model has one)")
        config = json.loads(meta.get("config", "{}"))
        return Vocabulary(json.loads(meta["tgt_vocab"]), config.get("unk_id", 0), config.get("pad_id", 1),
                          config.get("bos_id", 2), config.get("eos_id", 3))

    def map(self, words):
        """The sentence's tokens as the trainer reads them: a word outside the vocabulary is <unk>."""
        return [w if w in self.index else self.unk for w in words]

    def predicted(self):
        """W: what a model predicts, every token but <pad> and <bos> (<unk> and <eos> included)."""
        return [t for t in self.tokens if t not in (self.pad, self.bos)]


def read_sentences(path):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f if line.strip()]


def count_of_counts_discounts(counts):
    """Modified Kneser-Ney's D1, D2, D3+ from the counts of counts n1..n4 (Chen and Goodman, eq. 26)."""
    n = [0] * 5
    for c in counts:
        if c <= 4:
            n[c] += 1
    if min(n[1:5]) == 0:
        raise ValueError(f"modified Kneser-Ney needs counts of counts n1..n4 above 0, found {n[1:5]}: a corpus this "
                         "small takes --discount")
    y = n[1] / (n[1] + 2 * n[2])
    return (0.0, 1 - 2 * y * n[2] / n[1], 2 - 3 * y * n[3] / n[2], 3 - 4 * y * n[4] / n[3])


class KneserNeyTrigram:
    def __init__(self, sentences, vocabulary, discount=0.75, modified=False):
        self.vocab = vocabulary
        self.words = vocabulary.predicted()
        b = vocabulary.bos
        trigram = defaultdict(int)  # c(u v w)
        for sentence in sentences:
            tokens = [b, b] + vocabulary.map(sentence) + [vocabulary.eos]
            for i in range(2, len(tokens)):
                trigram[(tokens[i - 2], tokens[i - 1], tokens[i])] += 1
        # Continuation counts: N1+(. v w), then N1+(. w) from the bigram types.
        bigram = defaultdict(int)
        for (u, v, w) in trigram:
            bigram[(v, w)] += 1
        unigram = defaultdict(int)
        for (v, w) in bigram:
            unigram[w] += 1
        self.trigram, self.bigram, self.unigram = dict(trigram), dict(bigram), dict(unigram)
        if modified:
            self.d3 = count_of_counts_discounts(self.trigram.values())
            self.d2 = count_of_counts_discounts(self.bigram.values())
            self.d1 = count_of_counts_discounts(self.unigram.values())
        else:
            self.d3 = self.d2 = self.d1 = (0.0, discount, discount, discount)
        self.method = "modified Kneser-Ney (D1, D2, D3+ per order)" if modified else \
            f"interpolated Kneser-Ney, discount {discount}"

        def d(table, c):
            return table[min(c, 3)]

        # Per history: its total count and its discounted mass (the numerator of gamma).
        self.tri_total, self.tri_mass = defaultdict(int), defaultdict(float)
        for (u, v, w), c in self.trigram.items():
            self.tri_total[(u, v)] += c
            self.tri_mass[(u, v)] += d(self.d3, c)
        self.bi_total, self.bi_mass = defaultdict(int), defaultdict(float)
        for (v, w), c in self.bigram.items():
            self.bi_total[v] += c
            self.bi_mass[v] += d(self.d2, c)
        self.uni_total = sum(self.unigram.values())
        self.uni_mass = sum(d(self.d1, c) for c in self.unigram.values())

    def _discounted(self, table, c):
        return max(c - table[min(c, 3)], 0.0)

    def p1(self, w):
        # Interpolated with the uniform distribution over W: no word of the vocabulary has probability 0.
        c = self.unigram.get(w, 0)
        return (self._discounted(self.d1, c) + self.uni_mass / len(self.words)) / self.uni_total

    def p2(self, w, v):
        total = self.bi_total.get(v, 0)
        if total == 0:
            return self.p1(w)
        c = self.bigram.get((v, w), 0)
        return (self._discounted(self.d2, c) + self.bi_mass[v] * self.p1(w)) / total

    def p3(self, w, u, v):
        total = self.tri_total.get((u, v), 0)
        if total == 0:
            return self.p2(w, v)
        c = self.trigram.get((u, v, w), 0)
        return (self._discounted(self.d3, c) + self.tri_mass[(u, v)] * self.p2(w, v)) / total

    def score(self, sentences):
        """(predicted tokens, sum of -ln p) over the sentences, <eos> included."""
        b = self.vocab.bos
        tokens_scored, nll = 0, 0.0
        for sentence in sentences:
            tokens = [b, b] + self.vocab.map(sentence) + [self.vocab.eos]
            for i in range(2, len(tokens)):
                nll -= math.log(self.p3(tokens[i], tokens[i - 2], tokens[i - 1]))
                tokens_scored += 1
        return tokens_scored, nll


def main(argv=None):
    parser = argparse.ArgumentParser(description="Interpolated Kneser-Ney trigram perplexity with a Stepformer "
                                                 "model's vocabulary (see the module's docstring)")
    parser.add_argument("--model", required=True, help="a decoder-only model file: its tgt_vocab is the vocabulary")
    parser.add_argument("--train", required=True, help="training sentences, one tokenized sentence a line")
    parser.add_argument("--test", required=True, help="sentences to score")
    parser.add_argument("--discount", type=float, default=0.75, help="plain interpolated KN's discount (0.75)")
    parser.add_argument("--modified", action="store_true", help="modified KN: three discounts per order")
    args = parser.parse_args(argv)
    if not 0.0 < args.discount < 1.0:
        parser.error("--discount must lie strictly between 0 and 1")
    vocabulary = Vocabulary.from_model(args.model)
    model = KneserNeyTrigram(read_sentences(args.train), vocabulary, args.discount, args.modified)
    test = read_sentences(args.test)
    unknown = sum(w not in vocabulary.index for s in test for w in s)
    tokens, nll = model.score(test)
    print(f"{model.method}; vocabulary {len(vocabulary.tokens)} tokens from '{args.model}' "
          f"({len(model.words)} predicted: without <pad> and <bos>)")
    print(f"{len(test)} sentences, {unknown} words as <unk>")
    print(f"tokens scored {tokens} (every word and each <eos>)")
    print(f"mean NLL {nll / tokens:.4f} nats/token")
    print(f"perplexity {math.exp(nll / tokens):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
