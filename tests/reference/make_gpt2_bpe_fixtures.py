#!/usr/bin/python3
"""Fixtures for GPT-2's byte-level BPE (core/model/byte_bpe.h), from a reference written from GPT-2's own
encoder (openai/gpt-2 src/encoder.py: bytes_to_unicode, the pre-tokenising pattern with the `regex` module, merges
by rank) in Python, independent of the C++.

    /usr/bin/python3 tests/reference/make_gpt2_bpe_fixtures.py [MULTI30K_RAW_DIR]

Needs python3-regex. Writes tests/fixtures/gpt2_bpe/:
  vocab.json, merges.txt   a small byte-level BPE in GPT-2's format, learned here on Multi30k's English training
                           captions (1,000 merges: the most frequent pair first, ties by the pair's text), with
                           "<|endoftext|>" last, as GPT-2's is
  tokenization.json        "hostile": hard cases (contractions, digits, runs of spaces, tabs and newlines, emoji,
                           CJK, the special token, invalid UTF-8 given as bytes) with their ids and pieces;
                           "test_2016_en": the ids of every line of test_2016_flickr.en (the text is not copied:
                           the C++ test reads the shared data, with the file's SHA-256 to be sure it is the same)
"""
import collections
import gzip
import hashlib
import json
import os
import sys

import regex

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures", "gpt2_bpe")
PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
SPECIAL = "<|endoftext|>"
MERGES = 1000


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


BYTE_CHAR = bytes_to_unicode()


def byte_word(token):
    return tuple(BYTE_CHAR[b] for b in token.encode("utf-8"))


def learn_merges(lines, count):
    words = collections.Counter()
    for line in lines:
        for token in PATTERN.findall(line):
            words[byte_word(token)] += 1
    words = {w: c for w, c in words.items()}
    merges = []
    for _ in range(count):
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        merged = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + c
        words = merged
    return merges


class Reference:
    """GPT-2's encoder, as openai/gpt-2's encoder.py computes it."""

    def __init__(self, vocab, merges):
        self.encoder = vocab
        self.ranks = dict(zip(merges, range(len(merges))))

    def bpe(self, token):
        word = tuple(token)
        while len(word) > 1:
            pairs = set(zip(word, word[1:]))
            bigram = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if bigram not in self.ranks:
                break
            first, second = bigram
            new, i = [], 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                except ValueError:
                    new.extend(word[i:])
                    break
                new.extend(word[i:j])
                i = j
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new.append(first + second)
                    i += 2
                else:
                    new.append(word[i])
                    i += 1
            word = tuple(new)
        return word

    def encode(self, text):
        pieces = []
        parts = text.split(SPECIAL)
        for k, part in enumerate(parts):
            for token in PATTERN.findall(part):
                pieces.extend(self.bpe("".join(byte_word(token))))
            if k + 1 < len(parts):
                pieces.append(SPECIAL)
        return [self.encoder[p] for p in pieces], pieces


HOSTILE_TEXT = [
    "A man in an orange shirt is standing on the street.",
    "I'm sure they'll say it's theirs, we've seen he'd go; you're right. DON'T 'S 'RE O'Neil's",
    "1234567 3.14159 1,000,000 42nd 2x4 ½ ² ٣٤ Ⅻ",
    "a    b  c     d",
    "   leading spaces and trailing   ",
    "tabs\tand\t\tmore\t \t tabs",
    "line one\nline two\n\nafter a blank\r\nwindows\n",
    "😀👍🏽 emoji, 👨‍👩‍👧 a family, 🇩🇪 a flag",
    "東京で猫が寝ている。 한국어 문장입니다. 中文句子，还有标点！",
    "e\u0301 combining, non\u00a0breaking, zero\u200bwidth, soft\u00adhyphen",
    "Hello<|endoftext|>world <|endoftext|><|endoftext|> end",
    "",
    " ",
    "      ",
    "!!!???... ---- (brackets) [more] {and} \"quotes\" 'single'",
    "Ünïcödé ÀÉÎÕÜ straße ΑΒΓ αβγ кириллица",
]
HOSTILE_BYTES = [
    b"ab\xff\xfecd",          # bytes that never begin UTF-8
    b"cut \xe2\x82",          # a sequence cut short: one U+FFFD
    b"\xed\xa0\x80 surrogate",
    b"\xf0\x9f\x98x truncated emoji",
    b"\xc0\xaf overlong",
    b"\xe0\x80\xaf overlong 3",
    b"\xf4\x90\x80\x80 past U+10FFFF",
    b"ok \x80\x80 stray continuations",
]


def main():
    raw = (sys.argv[1] if len(sys.argv) > 1
           else os.path.join(HERE, "..", "..", "..", "shared", "data", "multi30k", "raw"))
    with gzip.open(os.path.join(raw, "train.en.gz"), "rt", encoding="utf-8", newline="\n") as f:
        train = f.read().split("\n")
    merges = learn_merges(train, MERGES)
    vocab = {}
    for c in BYTE_CHAR.values():
        vocab[c] = len(vocab)
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    vocab[SPECIAL] = len(vocab)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(OUT, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join("%s %s\n" % m for m in merges))
    ref = Reference(vocab, merges)
    hostile = []
    for text in HOSTILE_TEXT:
        ids, pieces = ref.encode(text)
        hostile.append({"text": text, "ids": ids, "pieces": pieces})
    for data in HOSTILE_BYTES:
        ids, pieces = ref.encode(data.decode("utf-8", errors="replace"))  # as Python reads such a file
        hostile.append({"bytes_hex": data.hex(), "ids": ids, "pieces": pieces})
    test_path = os.path.join(raw, "test_2016_flickr.en.gz")
    with gzip.open(test_path, "rb") as f:
        test_bytes = f.read()
    lines = test_bytes.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    fixture = {"about": "tests/reference/make_gpt2_bpe_fixtures.py: GPT-2's BPE on the vocabulary beside this file",
               "hostile": hostile,
               "test_2016_en": {"sha256": hashlib.sha256(test_bytes).hexdigest(),
                                "ids": [ref.encode(line)[0] for line in lines]}}
    with open(os.path.join(OUT, "tokenization.json"), "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print("%d merges, %d pieces; %d hostile cases, %d test lines" % (len(merges), len(vocab), len(hostile), len(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
