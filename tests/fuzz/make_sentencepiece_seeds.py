#!/usr/bin/python3
"""Writes the SentencePiece seeds of the tokenizer fuzz target (tests/fuzz/fuzz_tokenizer.cpp):

    /usr/bin/python3 tests/fuzz/make_sentencepiece_seeds.py

Each seed is b"\\0SPM" + a SentencePiece model + a text + the text's length (one byte). The model is
tests/fixtures/marian/tiny-de-en/target.spm (2.8 kB: under the target's -max_len), as it is, and with the crafted
fields of issue 46 appended (protobuf merges a repeated field and keeps the last of a single one):
  spm_plain             the model as it is
  spm_hostile_normalizer  a character map whose trie's first unit is 0xFFFFFE00 (libsentencepiece 0.1.97 read
                        2^30 units past it on the first sentence)
  spm_long_piece        a piece of 3000 bytes (the library builds its trie recursively, a stack frame a byte: the
                        reported 200 kB one overflowed the stack; this one is over our limit of 2048)
  spm_rule_past_strings a well-formed trie whose rule points past its strings
  spm_nul_piece         a piece holding a NUL byte
Standard library only; writes into tests/fuzz/corpus/tokenizer/ (replacing these seeds, nothing else).
"""
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus", "tokenizer")


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field_bytes(n, b):
    return varint(n << 3 | 2) + varint(len(b)) + b


def piece(text, score=-10.0, kind=1):
    return field_bytes(1, field_bytes(1, text) + varint(2 << 3 | 5) + struct.pack("<f", score) + varint(3 << 3) + varint(kind))


def charsmap(units, strings):
    return struct.pack("<I", 4 * len(units)) + b"".join(struct.pack("<I", u) for u in units) + strings


def normalizer(cmap):
    return field_bytes(3, field_bytes(2, cmap))


def seed(name, model, text=b"Ein Mann in einem orangefarbenen Hemd."):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(b"\0SPM" + model + text + bytes([len(text)]))


def main():
    base = open(os.path.join(ROOT, "tests", "fixtures", "marian", "tiny-de-en", "target.spm"), "rb").read()
    hostile = [0xFFFFFE00] + [0] * 255
    # "a" -> the string at byte 1000 of 2 (model/sentencepiece_proto.h's layout: root offset 256, "a" at 353).
    past = [0] * 512
    past[0] = 256 << 10
    past[353] = (97 << 10) | (1 << 8) | 0x61
    past[256] = (1 << 31) | 1000
    seed("spm_plain", base)
    seed("spm_hostile_normalizer", base + normalizer(charsmap(hostile, b"x\0")))
    seed("spm_long_piece", base + piece(b"x" * 3000))
    seed("spm_rule_past_strings", base + normalizer(charsmap(past, b"b\0")), b"a a")
    seed("spm_nul_piece", base + piece(b"a\0b", kind=4))


if __name__ == "__main__":
    main()
