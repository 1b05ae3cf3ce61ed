#!/usr/bin/python3
"""Fixtures for BERT's WordPiece tokenizer (core/model/wordpiece.h), from a reference written here in Python from
Hugging Face's slow BertTokenizer (transformers' models/bert/tokenization_bert.py: BasicTokenizer,
WordpieceTokenizer, _is_whitespace, _is_control, _is_punctuation; and tokenization_utils.py's tokenize: the text cut
at the special tokens first, and with do_lower_case everything between them lowered one character at a time).
Standard library only; independent of the C++.

    /usr/bin/python3 tests/reference/make_wordpiece_fixtures.py [MULTI30K_RAW_DIR]

Writes tests/fixtures/wordpiece/:
  vocab.txt     a small WordPiece vocabulary built here, deterministically, from Multi30k's English and German
                training captions (raw/train.{en,de}.gz): [PAD] [UNK] [CLS] [SEP] [MASK]; every character the basic
                tokenizer leaves (cased and uncased) and its "##" form; the most frequent whole words; frequent
                word beginnings and "##" endings; a few CJK and kana characters for the hard cases
  cases.json    "options": the option sets by name; "hard": hard cases (accents, ß, umlauts, Turkish İ, CJK and kana,
                punctuation runs, [MASK] and [mask], control and zero-width characters, tabs and newlines, U+00A0,
                long words, emoji, invalid UTF-8 as bytes) with their ids and pieces under every option set;
                "characters": for the option sets whose lowering / accent stripping differ, each code point that
                they change (letters and marks; one Hangul syllable in 97) and what it becomes; "words": random
                words of letters and marks (canonical reordering across characters) and what each becomes;
                "test_2016": the ids (without [CLS]/[SEP]) of every line of raw/test_2016_flickr.{en,de}.gz under the
                uncased and cased options, as little-endian uint16 in base64 with each line's count, and each
                file's SHA-256 (the text itself is not copied: the C++ test reads the shared data)

Which BertTokenizer: the one of transformers 4.x before the NFC step (later 4.x versions normalise the text to NFC
before the whitespace split; Google's original BERT and the Rust `tokenizers` BertNormalizer do not). The reference
follows the original: with accent stripping, NFC makes no difference (NFD follows); without it, decomposed input
such as "e\\u0301" stays two characters here.
"""
import base64
import collections
import gzip
import hashlib
import json
import os
import random
import struct
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures", "wordpiece")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


# [SECTION] the reference: tokenization_bert.py's logic


def is_whitespace(char):
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def is_control(char):
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char).startswith("C")


def is_punctuation(char):
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def is_chinese_char(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def whitespace_tokenize(text):
    text = text.strip()
    return text.split() if text else []


def strip_accents_of(text):
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


class Basic:
    def __init__(self, do_lower_case, strip_accents, tokenize_chinese_chars, never_split):
        self.do_lower_case = do_lower_case
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.never_split = set(never_split)

    def tokenize(self, text):
        text = self.clean(text)
        if self.tokenize_chinese_chars:
            text = "".join(" %s " % c if is_chinese_char(ord(c)) else c for c in text)
        split = []
        for token in whitespace_tokenize(text):
            if token not in self.never_split:
                if self.do_lower_case:
                    token = token.lower()
                    if self.strip_accents is not False:
                        token = strip_accents_of(token)
                elif self.strip_accents:
                    token = strip_accents_of(token)
            split.extend(self.split_on_punctuation(token))
        return whitespace_tokenize(" ".join(split))

    def split_on_punctuation(self, text):
        if text in self.never_split:
            return [text]
        out, new_word = [], True
        for c in text:
            if is_punctuation(c):
                out.append([c])
                new_word = True
            else:
                if new_word:
                    out.append([])
                new_word = False
                out[-1].append(c)
        return ["".join(x) for x in out]

    @staticmethod
    def clean(text):
        out = []
        for c in text:
            if ord(c) == 0 or ord(c) == 0xFFFD or is_control(c):
                continue
            out.append(" " if is_whitespace(c) else c)
        return "".join(out)


def wordpiece(token, vocab, max_chars=100):
    out = []
    for word in whitespace_tokenize(token):
        chars = list(word)
        if len(chars) > max_chars:
            out.append("[UNK]")
            continue
        start, sub, bad = 0, [], False
        while start < len(chars):
            end, cur = len(chars), None
            while start < end:
                s = "".join(chars[start:end])
                if start > 0:
                    s = "##" + s
                if s in vocab:
                    cur = s
                    break
                end -= 1
            if cur is None:
                bad = True
                break
            sub.append(cur)
            start = end
        out.extend(["[UNK]"] if bad else sub)
    return out


class Bert:
    """BertTokenizer.tokenize / encode: the text cut at the special tokens (each kept whole), and with do_lower_case
    what lies between them lowered one character at a time (tokenization_utils.py's re.sub with "(.+?)")."""

    def __init__(self, vocab, do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True):
        self.vocab = vocab
        self.do_lower_case = do_lower_case
        self.specials = [s for s in SPECIALS if s in vocab]
        self.basic = Basic(do_lower_case, strip_accents, tokenize_chinese_chars, SPECIALS)

    def chunks(self, text):
        out, i, start = [], 0, 0
        while i < len(text):
            hit = next((s for s in self.specials if text.startswith(s, i)), None)
            if hit:
                out.append((False, text[start:i]))
                out.append((True, hit))
                i += len(hit)
                start = i
            else:
                i += 1
        out.append((False, text[start:]))
        return out

    def tokenize(self, text):
        pieces = []
        for special, chunk in self.chunks(text):
            if special:
                pieces.append(chunk)
                continue
            if self.do_lower_case:
                chunk = "".join(c.lower() for c in chunk)
            for token in self.basic.tokenize(chunk):
                pieces.extend(wordpiece(token, self.vocab))
        return pieces

    def encode(self, text, add_cls_sep=True):
        pieces = self.tokenize(text)
        if add_cls_sep:
            pieces = ["[CLS]"] + pieces + ["[SEP]"]
        return [self.vocab[p] for p in pieces], pieces


OPTIONS = {
    "uncased": dict(do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True),
    "uncased_keep_accents": dict(do_lower_case=True, strip_accents=False, tokenize_chinese_chars=True),
    "cased": dict(do_lower_case=False, strip_accents=None, tokenize_chinese_chars=True),
    "cased_strip_accents": dict(do_lower_case=False, strip_accents=True, tokenize_chinese_chars=True),
    "uncased_no_chinese_split": dict(do_lower_case=True, strip_accents=None, tokenize_chinese_chars=False),
}


# [SECTION] the vocabulary


def build_vocab(lines):
    words = collections.Counter()
    for options in (OPTIONS["uncased"], OPTIONS["cased"]):
        basic = Basic(options["do_lower_case"], options["strip_accents"], True, SPECIALS)
        for line in lines:
            for t in basic.tokenize("".join(c.lower() for c in line) if options["do_lower_case"] else line):
                words[t] += 1
    chars = sorted({c for w in words for c in w})
    # For the hard cases: ASCII punctuation, Greek (final sigma), a few CJK ideographs (not 爱: [UNK]), kana, the
    # Hangul of one word and its jamo (what accent stripping makes of it), the dot of a lowered İ.
    extra_chars = ([chr(c) for c in range(33, 127) if not chr(c).isalnum()]
                   + [chr(c) for c in range(0x391, 0x3AA) if c != 0x3A2] + [chr(c) for c in range(0x3B1, 0x3CA)]
                   + list("我北京東猫こんにちは한국어") + list(unicodedata.normalize("NFD", "한국어")) + ["\u0307", "ı"])
    vocab = list(SPECIALS)
    seen = set(vocab)

    def add(piece):
        if piece not in seen:
            seen.add(piece)
            vocab.append(piece)

    for c in chars + extra_chars:
        add(c)
    for c in chars + extra_chars:
        add("##" + c)
    by_count = sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))
    whole = [w for w, n in by_count if len(w) > 1][:2200]
    endings, beginnings = collections.Counter(), collections.Counter()
    for w, n in words.items():
        if w in whole or len(w) < 4:
            continue
        for k in range(1, len(w) - 1):
            if 2 <= len(w) - k <= 6:
                endings["##" + w[k:]] += n
        for k in range(3, min(len(w), 7)):
            beginnings[w[:k]] += n
    for w in whole:
        add(w)
    for p, _ in sorted(endings.items(), key=lambda kv: (-kv[1], kv[0]))[:900]:
        add(p)
    for p, _ in sorted(beginnings.items(), key=lambda kv: (-kv[1], kv[0]))[:500]:
        add(p)
    return vocab


# [SECTION] the cases

HARD_TEXT = [
    "A man in an orange shirt is standing on the street.",
    "Héllo HÉLLO héllo! Crème brûlée, naïve café.",
    "He\u0301llo: a decomposed e and an acute accent alone \u0301 .",
    "Straße STRASSE Äpfel Öl Übermut ÄÖÜ äöü ß ẞ",
    "İstanbul'da IŞIK ışık İ i̇",
    "我爱北京天安门",
    "東京で猫が寝ている。 こんにちは世界 한국어 문장입니다.",
    "Wait...what?!?! (yes) -- no; [ok] {x} \"q\" 'single' #hash $5 @user 50% a+b=c ~tilde ^caret `tick` |pipe| \\b",
    "«quoted» „German“ ‘single’ — dash – en … ellipsis ¿qué? ¡sí!",
    "[MASK]",
    "The [MASK] sat on the [mask] and [Mask].",
    "a[MASK]b [CLS] x [SEP] [PAD][UNK] [MASK][MASK]",
    "[MA\u200bSK] is cleaned into a special token",
    "a\u0000b\u0001c\u007fd\u200be\u200df\ufeffg\u00adh\u2060i",
    "line one\nline two\r\nthree\tfour\u2028five\u2029six\u0085seven\u000bvert\u000cfeed",
    "non\u00a0breaking\u3000ideographic\u2009thin\u202fnarrow",
    "a" * 101 + " " + "b" * 100 + " " + "é" * 101,
    "xyz😀 😀👍🏽 emoji, 👨\u200d👩\u200d👧 a family, 🇩🇪 a flag",
    "ΟΔΟΣ Σ σς ΣΑΣ Ωmega Ω Kelvin K Å",
    "ǅemal ǈ ǋ ﬁ ﬀ ŉ ẞ",
    "\u1fef\u1fed\u0385 Greek accents that decompose into punctuation",
    "",
    " ",
    "\t\n \u00a0",
    "\u200b\u200b",
    "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
    "1,000.50 3.14 2x4 42nd ½ ² ٣٤",
    "Hello\U000F0000private\uE000use \U000E0001tag",
]
HARD_BYTES = [
    b"ab\xff\xfecd",
    b"cut \xe2\x82",
    b"caf\xc3\xa9 \xc3 broken",
    b"\xed\xa0\x80 surrogate",
    b"ok \x80\x80 stray [MA\xffSK] [MASK]\xff",
]


def interesting_code_points():
    """Code points whose lowering or accent stripping changes them, or that are Mn marks."""
    out = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        cat = unicodedata.category(c)
        if cat.startswith("C") or cat.startswith("Z"):
            continue
        if 0xAC00 <= cp <= 0xD7A3 and (cp - 0xAC00) % 97:
            continue  # one Hangul syllable in 97: they all decompose by the same formula
        if c.lower() != c or strip_accents_of(c) != c or cat == "Mn" or unicodedata.combining(c):
            out.append(cp)
    return out


def random_words(count, seed=7):
    """Words mixing letters, marks of several combining classes (0 included), Hangul syllables and characters whose
    decomposition holds marks: canonical reordering across characters."""
    pool = [chr(cp) for cp in (
        0x61, 0x65, 0x45, 0x130, 0x49, 0x3A3, 0x3C3, 0xDF, 0x1E9E,                 # letters, some with special lowering
        0x301, 0x300, 0x308, 0x327, 0x323, 0x345, 0x31B, 0xE48, 0x5B0, 0xF71,     # Mn of several classes
        0xF72, 0xF80, 0xC56, 0xB56, 0x1B35,
        0xC46, 0x102E,                                                             # Mn of class 0
        0x302E, 0x302F, 0x1D165, 0x1D16D, 0x1D16E, 0x16FF0, 0x1B44,                # not Mn, class not 0
        0xF73, 0xF75, 0x344, 0xC48, 0x1D160, 0x1D15F, 0x1D1BB, 0x1B06, 0xBCA,      # decompositions with marks
        0xDDE, 0x1D5, 0x1E09, 0x1FB7, 0x1F88, 0x212B, 0x2126, 0x212A, 0xF900,
        0xAC01, 0xD7A3, 0x1100, 0x1161, 0x11A8, 0x958)]                            # Hangul, a Devanagari nukta
    # Written out: a mark of class 0 between two non-marks of non-zero class keeps them in order; without it they swap.
    chosen = ["\U0001D16D\u0C46\U0001D165", "\U0001D16D\U0001D165", "a\U0001D16D\u102E\u0301\U0001D165e",
              "\U0001D160\u0F76\U0001D16D\U0001D165", "\u302F\U00016FF0\u0F78\u302E\U00016FF0"]
    rng = random.Random(seed)
    return chosen + ["".join(rng.choice(pool) for _ in range(rng.randint(1, 8))) for _ in range(count - len(chosen))]


def normalised(text, options):
    """What the basic tokenizer makes of one word's characters (lowered one at a time, then maybe stripped)."""
    if options["do_lower_case"]:
        text = "".join(c.lower() for c in text)
    strip = options["strip_accents"]
    if (options["do_lower_case"] and strip is not False) or (not options["do_lower_case"] and strip):
        text = strip_accents_of(text)
    return text


def main():
    raw = (sys.argv[1] if len(sys.argv) > 1
           else os.path.join(HERE, "..", "..", "..", "shared", "data", "multi30k", "raw"))
    lines = []
    for lang in ("en", "de"):
        with gzip.open(os.path.join(raw, "train.%s.gz" % lang), "rt", encoding="utf-8", newline="\n") as f:
            lines += f.read().split("\n")
    pieces = build_vocab(lines)
    vocab = {p: i for i, p in enumerate(pieces)}
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "vocab.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(p + "\n" for p in pieces))
    tokenizers = {name: Bert(vocab, **o) for name, o in OPTIONS.items()}

    hard = []
    for item in HARD_TEXT + HARD_BYTES:
        text = item if isinstance(item, str) else item.decode("utf-8", errors="replace")  # as Python reads a file
        case = {"text": item} if isinstance(item, str) else {"bytes_hex": item.hex()}
        case["ids"], case["pieces"] = {}, {}
        for name, t in tokenizers.items():
            case["ids"][name], case["pieces"][name] = t.encode(text)
        hard.append(case)

    # The options whose normalisation differs (the others repeat one of these): for each, the code points whose
    # normalisation is not themselves, with what it is.
    characters, words = {}, {"words": random_words(300)}
    for name in ("uncased", "uncased_keep_accents", "cased_strip_accents"):
        o = OPTIONS[name]
        characters[name] = [[cp, normalised(chr(cp), o)] for cp in interesting_code_points()
                            if normalised(chr(cp), o) != chr(cp)]
        words[name] = [normalised(w, o) for w in words["words"]]

    test = {}
    for lang in ("en", "de"):
        path = os.path.join(raw, "test_2016_flickr.%s.gz" % lang)
        with gzip.open(path, "rb") as f:
            data = f.read()
        test_lines = data.decode("utf-8").split("\n")
        if test_lines and test_lines[-1] == "":
            test_lines.pop()
        test[lang] = {"sha256": hashlib.sha256(data).hexdigest(), "lines": len(test_lines)}
        for name in ("uncased", "cased"):
            ids = [tokenizers[name].encode(line, add_cls_sep=False)[0] for line in test_lines]
            flat = b"".join(struct.pack("<%dH" % len(x), *x) for x in ids)
            test[lang][name] = {"lengths": [len(x) for x in ids],
                                "ids_u16le_base64": base64.b64encode(flat).decode("ascii")}

    fixture = {"about": "tests/reference/make_wordpiece_fixtures.py: Hugging Face's slow BertTokenizer, re-written, "
                        "on vocab.txt beside this file (Python %s, Unicode %s)"
                        % (sys.version.split()[0], unicodedata.unidata_version),
               "options": OPTIONS, "hard": hard, "characters": characters, "words": words, "test_2016": test}
    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print("%d pieces; %d hard cases, %d characters, %d words, %d + %d test lines"
          % (len(pieces), len(hard), sum(len(v) for v in characters.values()), len(words["words"]), test["en"]["lines"],
             test["de"]["lines"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
