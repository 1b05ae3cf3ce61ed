#!/usr/bin/python3
"""Writes core/model/unicode_wordpiece.inc: the Unicode facts BERT's WordPiece tokenizer (core/model/wordpiece.h) reads,
taken from Python's own `unicodedata` and `str.lower`, because Hugging Face's BertTokenizer is Python and asks exactly
these questions of exactly these tables (Debian 12's Python 3.11: Unicode 14.0.0).

    /usr/bin/python3 tools/make_unicode_tables.py > core/model/unicode_wordpiece.inc

The tables, each sorted by code point:
  kDroppedRanges       what BasicTokenizer._clean_text removes: U+0000, U+FFFD and every category C* (Cc, Cf, Cs, Co,
                       Cn: control, format, surrogate, private use, unassigned) except \\t \\n \\r
  kWhitespaceRanges    what _clean_text turns into " ": \\t \\n \\r, " " and category Zs
  kSeparatorRanges     what str.split() (whitespace_tokenize) splits on once the text is clean: " " and the characters
                       str.isspace() holds that _clean_text keeps (U+2028, U+2029)
  kPunctuationRanges   _is_punctuation: the ASCII runs 33-47, 58-64, 91-96, 123-126 and category P*
  kLowerRanges         str.lower() of one character where it is one other character: {first, last, delta, stride}:
                       c in [first, last] with (c - first) % stride == 0 lowers to c + delta. The one character whose
                       lower() is longer (U+0130 -> "i\\u0307") is checked here and written in the C++ by hand.
  kMarkRanges          category Mn (what _run_strip_accents drops), {first, last, starter}: starter when the
                       canonical combining class is 0 (the mark then bounds canonical reordering; see below)
  kOrderedNonMarks     the characters that are not Mn but have a non-zero combining class, with that class
  kStripRuns           for each character whose NFD differs from it (Hangul syllables aside: they decompose by
  kStripTargets        formula), what NFD keeps once Mn is dropped, when that is one character: runs {first, last,
                       index} of consecutive such code points, c becoming kStripTargets[index + (c - first)]
  kStripOther          the same where that is zero, two or three characters (U+0344 -> nothing, U+0BCA -> two),
                       plus the Mn marks of combining class 0 the decomposition holds, as NFD orders them

Why a decomposition's kept characters are enough for "NFD, then drop Mn": NFD is (1) each character replaced by its
full canonical decomposition, then (2) canonical reordering: a stable sort by combining class of each run of
characters whose class is not 0. Dropping Mn after (2) equals dropping Mn of non-zero class before (2), since a stable
sort keeps the relative order of the remaining elements and those marks bound no run; Mn of class 0 do bound runs, so
they are kept until the sort is done. What remains to order are the non-Mn characters of non-zero class
(kOrderedNonMarks: 25 in Unicode 14, viramas and musical symbols); every other kept character has class 0.
"""
import sys
import unicodedata

MAX = 0x110000


def is_surrogate(cp):
    return 0xD800 <= cp <= 0xDFFF


def ranges_of(predicate):
    out, start = [], None
    for cp in range(MAX + 1):
        inside = cp < MAX and predicate(cp)
        if inside and start is None:
            start = cp
        if not inside and start is not None:
            out.append((start, cp - 1))
            start = None
    return out


def category(cp):
    return unicodedata.category(chr(cp))


def dropped(cp):  # BasicTokenizer._clean_text: cp == 0 or cp == 0xFFFD or _is_control
    if cp in (0, 0xFFFD):
        return True
    if chr(cp) in "\t\n\r":
        return False
    return category(cp).startswith("C")


def whitespace(cp):  # _is_whitespace
    return chr(cp) in " \t\n\r" or category(cp) == "Zs"


def separator(cp):  # str.split() on the cleaned text
    return not dropped(cp) and (cp == 0x20 or (not whitespace(cp) and chr(cp).isspace()))


def punctuation(cp):  # _is_punctuation
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return category(cp).startswith("P")


def lower_runs():
    pairs = []
    for cp in range(MAX):
        if is_surrogate(cp):
            continue
        low = chr(cp).lower()
        if len(low) == 1 and ord(low) != cp:
            pairs.append((cp, ord(low) - cp))
        elif len(low) != 1:
            assert cp == 0x130 and low == "i\u0307", (hex(cp), low)
    runs = []  # [first, last, delta, stride]
    for cp, delta in pairs:
        if runs:
            r = runs[-1]
            if r[2] == delta and r[0] == r[1] and cp - r[1] in (1, 2):
                r[1], r[3] = cp, cp - r[0]
                continue
            if r[2] == delta and r[0] != r[1] and cp - r[1] == r[3]:
                r[1] = cp
                continue
        runs.append([cp, cp, delta, 1])
    return runs


def stripped_decomposition(cp):
    """NFD(chr(cp)) less its Mn of non-zero class (Mn of class 0 kept: they bound reordering); None if NFD keeps it."""
    d = unicodedata.normalize("NFD", chr(cp))
    if d == chr(cp):
        return None
    return [ord(x) for x in d if category(ord(x)) != "Mn" or unicodedata.combining(x) == 0]


def strip_tables():
    single, other = [], []
    for cp in range(MAX):
        if is_surrogate(cp) or 0xAC00 <= cp <= 0xD7A3:  # Hangul syllables: by formula in the C++
            continue
        kept = stripped_decomposition(cp)
        if kept is None:
            continue
        if len(kept) == 1 and category(kept[0]) != "Mn":
            single.append((cp, kept[0]))
        else:
            other.append((cp, kept))
    runs, targets = [], []  # runs: [first, last, index of first's target in targets]
    for cp, to in single:
        if runs and runs[-1][1] == cp - 1:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp, len(targets)])
        targets.append(to)
    return runs, targets, other


def check_assumptions():
    """What the C++ relies on, checked over every code point."""
    for cp in range(MAX):
        if is_surrogate(cp):
            continue
        c = chr(cp)
        low = c.lower()
        assert low.lower() == low, hex(cp)  # BasicTokenizer lowers again: a no-op once lowered
        outputs = [low, unicodedata.normalize("NFD", c)]
        for out in outputs:
            for x in out:
                # lower() and NFD never make white space, so the last whitespace_tokenize splits nothing new
                assert not x.isspace() or c.isspace(), hex(cp)
        for x in unicodedata.normalize("NFD", c):
            # NFD makes no character in HF's CJK ranges out of one outside them (so they are split before it runs)
            assert cjk(ord(x)) == cjk(cp) or cjk(cp), hex(cp)
    for cp in range(0xAC00, 0xD7A4):  # Hangul: NFD gives 2 or 3 jamo, category Lo, class 0
        assert all(category(ord(x)) == "Lo" and unicodedata.combining(x) == 0
                   for x in unicodedata.normalize("NFD", chr(cp)))


def cjk(cp):  # BasicTokenizer._is_chinese_char
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


def emit(name, type_name, items, fmt):
    print("constexpr %s %s[] = {" % (type_name, name))
    line = " "
    for item in items:
        text = " " + fmt(item) + ","
        if len(line) + len(text) > 118:
            print(line)
            line = " "
        line += text
    if line.strip():
        print(line)
    print("};")


def main():
    check_assumptions()
    print("// Generated by tools/make_unicode_tables.py from Python %s's unicodedata (Unicode %s) and str.lower: the"
          % (sys.version.split()[0], unicodedata.unidata_version))
    print("// character facts of BERT's BasicTokenizer (see the script for each table's meaning). Do not edit.")
    print("constexpr const char* kWordPieceUnicodeVersion = \"%s\";" % unicodedata.unidata_version)
    r = lambda x: "{0x%X, 0x%X}" % x
    emit("kDroppedRanges", "CodeRange", ranges_of(lambda cp: not is_surrogate(cp) and dropped(cp)) + [], r)
    emit("kWhitespaceRanges", "CodeRange", ranges_of(lambda cp: not is_surrogate(cp) and whitespace(cp)), r)
    emit("kSeparatorRanges", "CodeRange", ranges_of(lambda cp: not is_surrogate(cp) and separator(cp)), r)
    emit("kPunctuationRanges", "CodeRange", ranges_of(lambda cp: not is_surrogate(cp) and punctuation(cp)), r)
    emit("kLowerRanges", "LowerRange", lower_runs(), lambda x: "{0x%X, 0x%X, %d, %d}" % tuple(x))
    marks = []
    for first, last in ranges_of(lambda cp: not is_surrogate(cp) and category(cp) == "Mn"):
        for cp in range(first, last + 1):
            starter = unicodedata.combining(chr(cp)) == 0
            if marks and marks[-1][1] == cp - 1 and marks[-1][2] == starter:
                marks[-1][1] = cp
            else:
                marks.append([cp, cp, starter])
    emit("kMarkRanges", "MarkRange", marks, lambda x: "{0x%X, 0x%X, %s}" % (x[0], x[1], "true" if x[2] else "false"))
    ordered = [(cp, unicodedata.combining(chr(cp))) for cp in range(MAX)
               if not is_surrogate(cp) and unicodedata.combining(chr(cp)) and category(cp) != "Mn"]
    emit("kOrderedNonMarks", "OrderedChar", ordered, lambda x: "{0x%X, %d}" % x)
    runs, targets, other = strip_tables()
    emit("kStripRuns", "StripRun", runs, lambda x: "{0x%X, 0x%X, %d}" % tuple(x))
    emit("kStripTargets", "char32_t", targets, lambda x: "0x%X" % x)
    assert max(len(k) for _, k in other) <= 3
    emit("kStripOther", "StripOther", other,
         lambda x: "{0x%X, %d, {%s}}" % (x[0], len(x[1]), ", ".join("0x%X" % k for k in x[1]) or "0"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
