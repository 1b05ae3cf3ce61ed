#!/usr/bin/python3
"""Writes a random script for the app's monkey test (tests/monkey/run_monkey.sh), to be played as a lesson:

    python3 tests/monkey/monkey_script.py --app build/app/stepformer --seed 1 --commands 10000 --out monkey.lesson
    xvfb-run -a build/app/stepformer --no-settings --lesson monkey.lesson

The script is meant for `stepformer --lesson FILE`, not --script: a script with one line the parser rejects does
not run at all (gui/script/script_parse.cpp, strict mode), while a lesson lists such lines when it opens and
skips each when it reaches it. So one run exercises both the commands the parser accepts, with random valid
and invalid arguments (heads out of range, absurd numbers, hostile files, writes that must be refused), and the
lines it rejects (unknown commands, wrong argument counts, garbage bytes). The script never holds `pause` (a
lesson waits there for a key), a `wait` of more than a few frames, or a `quit` before its last line.

--commands N counts the lines the parser accepts (they run in the app); on top of them the script has the lines
it rejects: N * --invalid-ratio deliberately malformed ones, and the random arguments that miss (all in all
about a fifth of the lines), every --checkpoint-every commands a `layout monkey-checkpoint-NNNNNN.json`
(a file the run checks for: how far the app got), and at the end `layout monkey-checkpoint-final.json` and
`quit`. The commands, what their arguments may be and the stages come from the app itself, `APP
--script-grammar` (the parser's table, app/gui/script/script_parse.h; the script stops with the reason when the app
cannot be run): the lines are made from each argument's kind (a count and its range, a head, a stage, a file to
write...), and which lines the parser rejects is decided here from the same grammar (classify() below). The
manifest (--manifest, default OUT.json) lists them, so the run can compare them with what the app reports, and
tests/gui/test_script_grammar.cpp compares them with the parser's verdict.

Python 3 standard library only; the same --seed and options give the same script, byte for byte.
"""
import argparse
import json
import os
import random
import re
import struct
import sys

# --- the parser's grammar (app/gui/script/script_parse.h), read from `APP --script-grammar` ---------------------

GRAMMAR = {}   # command name -> its entry of the app's grammar ("arguments": how the line is read, "forms")
STAGES = []    # the stages' names, from the grammar
MAX_SCRIPT_BYTES = 1 << 20  # replaced by the grammar's limits.script_bytes
INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1

# What a line may ask of the monkey run, a matter of the run and not of the grammar: a `wait` of more than a
# few frames stalls it, and under ASan a step of the classroom model takes seconds (`wait-train`).
RUN_LIMITS = {"wait": 5, "wait-train": 3}


def read_grammar(app):
    """The grammar from `APP --script-grammar` (JSON); exits with the reason when the app cannot give it."""
    import subprocess
    try:
        run = subprocess.run([app, "--script-grammar"], capture_output=True, timeout=60,
                             env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    except (OSError, subprocess.SubprocessError) as e:
        sys.exit(f"monkey_script.py: cannot run {app} --script-grammar: {e}")
    if run.returncode != 0:
        sys.exit(f"monkey_script.py: {app} --script-grammar exited with {run.returncode}: "
                 f"{run.stderr.decode(errors='replace').strip()[:500]}")
    try:
        grammar = json.loads(run.stdout)
        commands = {c["name"]: c for c in grammar["commands"]}
        stages = list(grammar["stages"])
    except (ValueError, KeyError, TypeError) as e:
        sys.exit(f"monkey_script.py: {app} --script-grammar did not print the grammar ({e})")
    for c in commands.values():
        for form in c["forms"]:
            for arg in form:
                if arg["kind"] not in KINDS:
                    sys.exit(f"monkey_script.py: the app's grammar has an argument kind this script does not know, "
                             f"'{arg['kind']}' ({c['name']} {arg['name']}): teach fits() and Monkey.argument() it")
    return grammar, commands, stages


CPP_SPACE = b" \t\n\v\f\r"  # isspace() in the C locale: what `istream >> string` splits on


def words_of(text):
    return [w for w in re.split(rb"[ \t\n\v\f\r]+", text) if w]


def is_int(s):
    if not s:
        return False
    i = 1 if s[:1] == b"-" else 0
    if i == len(s):
        return False
    if any(c < 0x30 or c > 0x39 for c in s[i:]):
        return False
    return len(s) < 10


def c_str(s):
    """What a std::string's c_str() shows to strtof: up to the first NUL."""
    n = s.find(b"\0")
    return s if n < 0 else s[:n]


_STRTOF = re.compile(
    rb"[ \t\n\v\f\r]*[+-]?(?:(?P<dec>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    rb"|(?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)"
    rb"|(?P<inf>[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)|(?P<nan>[nN][aA][nN](?:\([0-9A-Za-z_]*\))?))")


def strtof_whole(s):
    """strtof(s) when it reads all of s (up to a NUL), as a float32 value; None when it does not."""
    s = c_str(s)
    m = _STRTOF.fullmatch(s)
    if not m:
        # strtof reads a prefix at most (e.g. "1e" -> 1): the rest is left over, so the parser rejects it.
        return None
    body = s.strip(CPP_SPACE)
    negative = body.startswith(b"-")
    body = body.lstrip(b"+-")
    if m.group("inf"):
        value = float("inf")
    elif m.group("nan"):
        return float("nan")
    elif m.group("hex"):
        text = body.decode()
        if "p" not in text.lower():
            text += "p0"
        value = float.fromhex(text)
    else:
        value = float(body.decode())
    if negative:
        value = -value
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]  # rounded to float, as strtof does
    except OverflowError:
        return float("-inf") if negative else float("inf")


def from_chars_int(s):
    """std::from_chars into an int over all of s (no '+', no spaces), or None."""
    if not re.fullmatch(rb"-?[0-9]+", s):
        return None
    v = int(s)
    return v if INT_MIN <= v <= INT_MAX else None


def head_ref_ok(text):
    d1 = text.find(b".")
    if d1 < 0:
        return False
    d2 = text.find(b".", d1 + 1)
    if d2 < 0:
        return False
    if text[:d1] not in (b"enc", b"dec", b"cross"):
        return False
    layer, head = from_chars_int(text[d1 + 1:d2]), from_chars_int(text[d2 + 1:])
    return layer is not None and head is not None and layer >= 1 and head >= 1  # numbered from 1, as in the paper


def split_line(raw):
    """The parser's view of a line: None (blank or comment), or (name, rest)."""
    start = len(raw) - len(raw.lstrip(b" \t\r"))
    if start == len(raw) or raw[start:start + 1] == b"#":
        return None
    line = raw[start:].rstrip(b"\r \t")
    space = min([i for i in (line.find(b" "), line.find(b"\t")) if i >= 0], default=-1)
    if space < 0:
        return line, b""
    name = line[:space]
    rest = line[space:].lstrip(b" \t")
    return name, rest


# Kinds whose argument is any text (the rest of the line, or any one word): checked, if at all, when the line runs.
FREE_KINDS = ("word", "recipe", "text", "model-path", "output-path", "checkpoint", "strategy")
KINDS = ("count", "number", "switch", "keyword", "stage", "head", "language-pair") + FREE_KINDS


def language_pair_ok(word):
    """SRC-TGT, two codes of 2 or 3 letters (isalpha in the C locale), split at the first dash."""
    def code(c):
        return 2 <= len(c) <= 3 and all(0x41 <= b <= 0x5a or 0x61 <= b <= 0x7a for b in c)
    return b"-" in word and code(word.split(b"-", 1)[0]) and code(word.split(b"-", 1)[1])


def fits(arg, word):
    """Whether one word fits an argument of the grammar, as the parser's fits() decides."""
    kind = arg["kind"]
    if kind == "count":
        return is_int(word) and arg["least"] <= int(word) <= arg["most"]
    if kind == "number":
        v = strtof_whole(word)
        return v is not None and arg["least"] <= v <= arg["most"]
    if kind in ("switch", "keyword"):
        return word.decode("latin-1") in arg["words"]
    if kind == "stage":
        return word.decode("latin-1") in STAGES
    if kind == "head":
        return head_ref_ok(word)
    if kind == "language-pair":
        return language_pair_ok(word)
    return kind in FREE_KINDS


def check_args(name, rest):
    """The parser's check_command, on the command's entry of the grammar: (ok, args as the app will see them)."""
    spec = GRAMMAR[name.decode("latin-1")]
    arity, forms = spec["arguments"], spec["forms"]
    if arity == "line-or-none":
        return True, ([rest] if rest else [])
    if arity == "line":
        return bool(rest), ([rest] if rest else [])
    args = words_of(rest)
    if arity == "line-of-words" and not rest:
        return False, args
    if arity == "words" and len(args) != len(forms[0]):
        return False, args
    if arity == "word-or-none":
        if len(args) > 1:
            return False, args
        if not args:
            return True, args
    ok = any(len(form) == len(args) and all(fits(a, w) for a, w in zip(form, args)) for form in forms)
    return ok, args


def classify(raw):
    """'skip' (blank or comment), 'bad' (the parser rejects it), or ('ok', name, args)."""
    parts = split_line(raw)
    if parts is None:
        return "skip"
    name, rest = parts
    if name.decode("latin-1") not in GRAMMAR:
        return "bad"
    ok, args = check_args(name, rest)
    return ("ok", name.decode("latin-1"), args) if ok else "bad"


def forbidden(kind):
    """Lines that would stop or stall the run: a lesson waits at `pause`, `quit` ends it, RUN_LIMITS."""
    if kind in ("skip", "bad"):
        return False
    _, name, args = kind
    return name in ("pause", "quit") or (name in RUN_LIMITS and args and int(args[0]) > RUN_LIMITS[name])


# --- random material ------------------------------------------------------------------------------------------

FALLBACK_SRC = ("ein mann sitzt auf einer bank . zwei hunde spielen im schnee un homme avec une femme dans la rue "
                "junge frau kinder wasser ball straße le chien court sur l' herbe").split()
FALLBACK_TGT = "a man is sitting on a bench . two dogs play in the snow with woman street".split()
SPECIAL_TOKENS = ["<unk>", "<pad>", "<bos>", "<eos>", "<s>", "</s>", "<mask>"]
UNICODE_BITS = ["Straße", "Mädchen", "œuvre", "naïve", "日本語のテキスト", "中文", "한국어", "Ελληνικά", "русский",
                "עברית", "العربية", "\u202eevil\u202c", "a\u200db", "\u200b", "\ufeff", "\ufffd", "e\u0301",
                "Z\u0351\u0352\u0357\u035b\u0303\u0304", "🙂", "👩‍👩‍👧‍👦", "🏳️‍🌈", "\U0001F9EA", "\u0000x",
                "ﬁ", "Ⅻ", "½", "٣", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\u2028", "\u00a0", "\u3000", "&amp;", "&apos;", "&lt;", "&#124;",
                "%s%n%x", "{}", "\\n", "'", '"', "`", "$(rm)", "..", "...", "--", "…"]
CONTROL_BYTES = [bytes([c]) for c in range(1, 32) if c != 10] + [b"\x7f", b"\x00", b"\x1b[31m", b"\x1b]0;t\x07"]
BAD_UTF8 = [b"\xff", b"\xfe\xff", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80",
            b"\xc3", b"\xe2\x82", b"\xf0\x9f\x99", b"\xf8\x88\x80\x80\x80", b"\xc3\x28"]


def read_vocab(path):
    """The source and target vocabularies in a model file's metadata (empty lists if it cannot be read)."""
    try:
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            if n > 64 << 20:
                return [], []
            meta = json.loads(f.read(n)).get("__metadata__", {})
        src, tgt = json.loads(meta.get("src_vocab", "[]")), json.loads(meta.get("tgt_vocab", "[]"))
        return [w for w in src if isinstance(w, str)], [w for w in tgt if isinstance(w, str)]
    except (OSError, ValueError, struct.error, AttributeError):
        return [], []


class Monkey:
    def __init__(self, opts):
        self.r = random.Random(opts.seed)
        self.opts = opts
        self.src_words, self.tgt_words = [], []
        for m in opts.models:
            s, t = read_vocab(m)
            self.src_words += s[4:]
            self.tgt_words += t[4:]
        self.src_words = sorted(set(self.src_words)) or FALLBACK_SRC
        self.tgt_words = sorted(set(self.tgt_words)) or FALLBACK_TGT
        self.fresh = 0
        self.long_budget = opts.long_bytes

    # numbers ------------------------------------------------------------------------------------------------
    def count(self, small=12, most=100000):
        r = self.r.random()
        if r < 0.5:
            return str(self.r.randint(0, small))
        if r < 0.65:
            return str(self.r.randint(0, 300))
        if r < 0.82:
            return str(self.r.choice([0, 1, 2, 255, 256, 257, 511, 512, most - 1, most, most + 1, 65535, 65536]))
        return self.r.choice(["-1", "-0", "007", "+5", "1e3", "0x10", "2147483647", "2147483648", "999999999",
                              "1000000000", "99999999999999999999", "-2147483649", "1.5", "one", "٣", "5\x00",
                              str(self.r.randint(0, 999999999)), str(self.r.randint(-999999, -1))])

    def real(self):
        return self.r.choice(["0", "1", "0.5", "0.7", "2", "1e-30", "1e30", "1e39", "-1", "-0", "nan", "inf",
                              "-inf", "NaN", "infinity", "0x1p3", "3.4028235e38", "1e-45", "4.0000001", "0.49999",
                              "64", "64.000001", "65", "1,5", "", "abc", str(round(self.r.uniform(-5, 70), 3))])

    def head_ref(self):
        kind = self.r.choice(["enc", "dec", "cross"] * 6 + ["ENC", "encoder", "x", "", "cross ", "déc"])

        def part():
            r = self.r.random()
            if r < 0.75:
                return str(self.r.randint(0, 9))
            if r < 0.85:
                return str(self.r.choice([-1, -2, -2147483648, 2147483647, 12, 100000]))
            return self.r.choice(["2147483648", "99999999999", "+1", "", " 1", "1.0", "0x1", "٣", "-0", "00"])
        shape = self.r.random()
        if shape < 0.9:
            return f"{kind}.{part()}.{part()}"
        return self.r.choice([f"{kind}.{part()}", f"{kind}..{part()}", f"{kind}.{part()}.{part()}.{part()}",
                              kind, f".{part()}.{part()}", f"{kind}.{part()}.{part()}."])

    # text ---------------------------------------------------------------------------------------------------
    def words(self, vocab, lo=1, hi=20):
        return " ".join(self.r.choice(vocab) for _ in range(self.r.randint(lo, hi)))

    def unknown_word(self):
        return "".join(self.r.choice("abcdefghijklmnopqrstuvwxyzäöüß") for _ in range(self.r.randint(1, 30)))

    def long_text(self, vocab):
        """Tens of kB (or just under/over the tokenizer's 16 kB), within the script's byte budget."""
        size = self.r.choice([16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, self.r.randint(12000, 16000),
                              self.r.randint(17000, 60000)])
        if size > self.long_budget:
            return self.words(vocab, 20, 60).encode()
        self.long_budget -= size
        kind = self.r.random()
        if kind < 0.4:
            unit = (self.words(vocab, 50, 50) + " ").encode()
        elif kind < 0.6:
            unit = ("".join(self.r.choice(UNICODE_BITS) for _ in range(40)) + " ").encode()
        elif kind < 0.8:
            unit = b"a"
        else:
            unit = b". "
        return (unit * (size // len(unit) + 1))[:size].replace(b"\n", b" ")

    def text(self, vocab, long_ok=True):
        r = self.r.random()
        if r < 0.45:
            out = self.words(vocab).encode()
        elif r < 0.58:
            out = " ".join(self.r.choice(vocab + [self.unknown_word()] * 3) for _ in range(self.r.randint(1, 15))).encode()
        elif r < 0.68:
            out = " ".join(self.r.choice(UNICODE_BITS + vocab) for _ in range(self.r.randint(1, 12))).encode()
        elif r < 0.76:
            out = b" ".join(self.r.choice(CONTROL_BYTES + BAD_UTF8 + [w.encode() for w in vocab[:50]])
                            for _ in range(self.r.randint(1, 12)))
        elif r < 0.82:
            out = " ".join(self.r.choice(SPECIAL_TOKENS + [".", ",", "!", "?", "'", "&"]) for _ in range(self.r.randint(1, 8))).encode()
        elif r < 0.88:  # around the models' 256 positions (<bos> and <eos> included)
            out = self.words(vocab, 250, 262).encode()
        elif r < 0.93:
            out = self.r.choice(["x", ".", "-", "a", "0", "<eos>", "\u00a0", "\ufeff"]).encode()
        elif r < 0.97 and long_ok:
            out = self.long_text(vocab)
        else:
            out = self.words(vocab, 1, 6).encode() + self.r.choice(CONTROL_BYTES + BAD_UTF8) + b" tail"
        return out.replace(b"\n", b" ")

    # paths --------------------------------------------------------------------------------------------------
    def model_path(self):
        pool = self.opts.models if (self.r.random() < 0.6 or not self.opts.bad_models) else self.opts.bad_models
        return self.r.choice(pool).encode()

    def write_path(self, ext):
        r = self.r.random()
        if r < 0.5 or not (self.opts.existing or self.opts.outside):
            self.fresh += 1
            name = f"m-{self.fresh:05d}{ext}"
            if self.r.random() < 0.15:
                name = self.r.choice([f"sub dir/{name}", f"./{name}", f"ünïcödé-{self.fresh}{ext}",
                                      f"with space {self.fresh}{ext}", f"{name}.tmp", f"-{self.fresh}{ext}",
                                      f"{'x' * 300}{ext}", f"newdir/{name}", f"{self.fresh}\x01{ext}"])
            return name.encode()
        if r < 0.68 and self.opts.existing:
            return self.r.choice(self.opts.existing).encode()
        if r < 0.88 and self.opts.outside:
            return self.r.choice(self.opts.outside).encode()
        return self.r.choice([".", "..", "/", "./", "../", "~/x.png", "/tmp", "/dev/null", "/proc/self/mem",
                              "a/../../x.png", "x.png/", "\ufeffx.png", "nul\x00.png"]).encode()

    # one argument, by its kind in the grammar ------------------------------------------------------------
    def argument(self, name, arg):
        """A random value for one argument of command `name`, mostly one its kind takes (bytes)."""
        r, kind = self.r, arg["kind"]
        if kind == "count":
            if name in RUN_LIMITS:
                return r.choice([str(r.randint(arg["least"], RUN_LIMITS[name]))] * 6 + ["-1", "x"]).encode()
            most = arg["most"]
            return self.count(min(12, most), most).encode()
        if kind == "number":
            lo, hi = arg["least"], arg["most"]
            return r.choice([self.real(), str(round(r.uniform(lo, hi), 3)), f"{lo:g}", f"{hi:g}",
                             f"{lo * 0.9998:g}", f"{hi * 1.0025:g}", str(r.randint(int(lo), int(hi)))]).encode()
        if kind in ("switch", "keyword"):
            w = r.choice(arg["words"])
            if r.random() < 0.85:
                return w.encode()
            return r.choice([w.upper(), w + "x", w[:-1], "", " ".join(arg["words"]), "1"]).encode()
        if kind == "stage":
            return r.choice(self.opts.stages * 5 + ["Tokens", "decoder", "", "all_heads", "tokens2", "é"]).encode()
        if kind == "head":
            return self.head_ref().encode()
        if kind == "recipe":  # the recipes the app has, and some it has not
            return r.choice(arg.get("words", []) * 4 + ["huge", "Classroom", self.unknown_word()]).encode()
        if kind == "language-pair":
            return r.choice(["de-en", "fr-en", "en-de"] * 3 +
                            ["de", "de-", "deu-eng", "d-e", "1-2", "de-en fr-en", "DE-EN", "dé-en"]).encode()
        if kind == "word":
            if arg.get("language") == "target":
                return r.choice(self.tgt_words * 3 + SPECIAL_TOKENS + [self.unknown_word(), "é", "🙂"]).encode()
            return r.choice(["de-en.safetensors", "x.safetensors", "de-en", self.unknown_word()]).encode()
        if kind == "text":
            if arg.get("words") and r.random() < 0.2:  # a word that means more ("reference -")
                return r.choice(arg["words"]).encode()
            language = arg.get("language", "any")
            vocab = (self.src_words if language == "source" else self.tgt_words if language == "target"
                     else self.src_words + self.tgt_words)
            return self.text(vocab)
        if kind == "model-path":
            return self.model_path()
        if kind == "output-path":
            return self.write_path(arg.get("extension", ""))
        if kind == "checkpoint":  # a file the run resumes from and saves to: a fresh name, or one used before
            self.fresh += 1
            return f"run-{r.randint(1, 3) if r.random() < 0.5 else self.fresh}{arg.get('extension', '')}".encode()
        if kind == "strategy":
            return self.decode_args().encode()
        raise AssertionError(kind)  # read_grammar() refuses kinds it does not know

    def bad_argument(self, arg):
        """A word the argument's kind refuses (bytes), or None for a kind that takes any."""
        r, kind = self.r, arg["kind"]
        if kind == "count":
            return r.choice([str(arg["least"] - 1), str(arg["most"] + 1), "1e2", "x", "99999999999"]).encode()
        if kind == "number":
            return r.choice([f"{arg['least'] / 2:g}", f"{arg['most'] * 1.5:g}", "nan", "x", "1,5"]).encode()
        if kind in ("switch", "keyword"):
            return r.choice([arg["words"][0] + "x", "maybe", arg["words"][0].upper()]).encode()
        if kind == "stage":
            return r.choice([b"decoder", b"Tokens", b"all_heads"])
        if kind == "head":
            return r.choice([b"foo.1.2", b"enc.1", b"enc.0.0", b"dec.1.-1"])
        if kind == "language-pair":
            return r.choice([b"deutsch", b"d-e", b"de_en"])
        return None

    # one command --------------------------------------------------------------------------------------------
    def command(self, name):
        """A line for `name` with random arguments from its grammar, mostly ones the parser accepts."""
        r, spec = self.r, GRAMMAR[name]
        arity, form = spec["arguments"], r.choice(spec["forms"])
        if (arity == "word-or-none" and r.random() < 0.3) or (arity == "line-or-none" and r.random() < 0.1):
            form = []
        args = [self.argument(name, a) for a in form]
        line = name.encode() + (b" " + b" ".join(args) if args else b"")
        return line

    def decode_args(self):
        r = self.r
        s = r.random()
        if s < 0.25:
            return r.choice(["greedy", "greedy", "greedy extra", "Greedy", "beam", "sample", "nucleus 0.9", "-"])
        if s < 0.6:
            parts = ["sample", self.real()]
            for extra in ([str(r.randint(0, 100)), "-5", "0", "2147483648", "99999999999", "x"],
                          ["0.9", "1", "0", "-1", "1.5", "nan", "inf"],
                          [str(r.randint(0, 2 ** 32)), "-1", "18446744073709551615", "18446744073709551616", "x"]):
                if r.random() < 0.6:
                    parts.append(r.choice(extra))
                else:
                    break
            return " ".join(parts)
        width = r.choice([str(r.randint(1, 8)), str(r.randint(1, 64)), "0", "-1", "64", "65", "1000000",
                          "2147483648", "1.5", "x"])
        parts = ["beam", width]
        if r.random() < 0.5:
            parts.append(r.choice([self.real(), "0.6", "0", "-1", "1e38"]))
        return " ".join(parts)

    def invalid(self):
        """A line the parser rejects, most of the time (classify() decides)."""
        r = self.r
        s = r.random()
        if s < 0.3:  # a known command with the wrong number of arguments
            name = r.choice([n for n, c in GRAMMAR.items() if n not in ("pause", "quit") and c["arguments"] != "line-or-none"])
            arity, n = GRAMMAR[name]["arguments"], len(GRAMMAR[name]["forms"][0])
            if arity in ("line", "line-of-words"):
                return name.encode() + r.choice([b"", b"   ", b"\t", b" \t \r"])
            if arity == "word-or-none":
                n = 1
            if n == 0:
                return f"{name} {self.count()}".encode()
            words = [self.count() for _ in range(r.choice([0, n + 1, n + 2]) if arity == "words" else r.choice([2, 3]))]
            return (name + " " + " ".join(words)).rstrip().encode() if words else name.encode()
        if s < 0.5:  # an unknown command
            name = r.choice(["jump", "Quit", "SENTENCE", "sentence:", "stepx", "heads", "model-info", "exit",
                             "wait5", "stage=tokens", "ui_scale", "-", "+", "!", "export", "rm", "pause2",
                             "caption\v", "step\f3", "\ufeffstage", self.unknown_word()])
            return (name + " " + self.words(self.src_words, 0, 4)).rstrip().encode()
        if s < 0.65:  # random bytes, no newline
            return bytes(r.choice([b for b in range(256) if b != 10]) for _ in range(r.randint(1, 80)))
        if s < 0.75:  # control characters only, or a unicode lookalike of a command
            return r.choice([b"\x01\x02\x03", b"\x1b[2J", b"\x00", b"\x7f\x7f", "ѕtep".encode(), "qսit".encode(),
                             "stage\u00a0tokens".encode(), b"\xef\xbb\xbfquit"])
        # a known command with one argument its kind refuses (out of range, malformed), the others valid
        choices = [(n, form, i) for n, c in GRAMMAR.items() for form in c["forms"] for i, a in enumerate(form)
                   if a["kind"] not in FREE_KINDS]
        name, form, i = r.choice(choices)
        args = [self.bad_argument(a) if j == i else self.argument(name, a) for j, a in enumerate(form)]
        return name.encode() + b" " + b" ".join(args)

WEIGHTS = {"sentence": 8, "stage": 8, "attention": 6, "layer": 4, "head": 4, "hover": 5, "unhover": 2, "wait": 2,
           "screenshot": 1.2, "layout": 1.2, "present": 2, "fullscreen": 1.5, "ui-scale": 3, "caption": 3,
           "export-png": 0.8, "export-panel": 0.8, "export-csv": 1, "export-npy": 1, "head-off": 4, "head-on": 3,
           "causal-mask": 2, "padding-mask": 2, "positional": 2, "mask": 4, "reset": 2, "step": 5, "back": 4,
           "run": 2, "restart": 2, "decode": 4, "reference": 3, "force": 4, "model": 0.8, "open": 0.8, "show": 2,
           "view": 2, "expand": 4, "zoom": 4, "explain": 2, "pad": 3, "train": 1.5, "snapshot": 3,
           "wait-train": 1, "position": 2, "written-for": 1}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--commands", type=int, default=1000, help="lines the parser accepts (they run in the app)")
    ap.add_argument("--out", required=True, help="the script (a lesson) to write")
    ap.add_argument("--manifest", help="JSON summary of the script (default: OUT.json)")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(here)),
                    help="the repository (for the default models)")
    ap.add_argument("--model", dest="models", action="append", default=[],
                    help="a model file for `model`/`open` (repeat; default the shipped and the test models)")
    ap.add_argument("--bad-model", dest="bad_models", action="append", default=[],
                    help="a hostile path for `model`/`open`: missing, a folder, a FIFO, a truncated file (repeat)")
    ap.add_argument("--existing", action="append", default=[],
                    help="a file in the run folder that screenshot/layout/export-* must not replace (repeat)")
    ap.add_argument("--outside", action="append", default=[],
                    help="a path outside the run folder, directly or through a symlink, that writes must refuse")
    ap.add_argument("--app", required=True,
                    help="the app (build/app/stepformer): the script's grammar is read from `APP --script-grammar`")
    ap.add_argument("--invalid-ratio", type=float, default=0.12, help="lines the parser rejects, per command")
    ap.add_argument("--checkpoint-every", type=int, default=250)
    ap.add_argument("--long-bytes", type=int, default=None,
                    help="bytes of very long sentences and captions in all (default: 100 per command, at most 400 kB)")
    ap.add_argument("--max-bytes", type=int, default=None,
                    help="the script's size limit (default: 4 kB under the app's, from its grammar)")
    ap.add_argument("--exclude", action="append", default=[], metavar="REGEX",
                    help="never write a line this (Python, bytes) regular expression finds: to go on past a known "
                         "bug, e.g. --exclude '^mask .*[.]-' (repeat)")
    opts = ap.parse_args()
    if opts.commands < 1:
        ap.error("--commands must be at least 1")
    if not opts.models:
        opts.models = [os.path.join(opts.source, "assets", "models", n) for n in ("de-en.safetensors", "fr-en.safetensors")]
        fixtures = os.path.join(opts.source, "tests", "fixtures", "models")
        if os.path.isdir(fixtures):
            opts.models += sorted(os.path.join(fixtures, f) for f in os.listdir(fixtures) if f.endswith(".safetensors"))
    if not opts.bad_models:
        opts.bad_models = ["/nonexistent/model.safetensors", "/", "/dev/zero", "/dev/null", "/proc/self/status"]
    if opts.long_bytes is None:
        opts.long_bytes = min(400_000, 100 * opts.commands)
    grammar, commands, stages = read_grammar(opts.app)
    GRAMMAR.update(commands)
    STAGES[:] = stages
    opts.stages = stages
    if opts.max_bytes is None:
        opts.max_bytes = grammar.get("limits", {}).get("script_bytes", MAX_SCRIPT_BYTES) - 4096
    # How often each command comes (the interesting ones more); a command the table below does not name yet
    # comes as often as most.
    weights = {c: WEIGHTS.get(c, 2) for c in GRAMMAR if c not in ("pause", "quit")}

    m = Monkey(opts)
    excludes = [re.compile(x.encode()) for x in opts.exclude]
    names, w = list(weights), list(weights.values())
    lines = [f"# monkey test script: seed {opts.seed}, {opts.commands} commands "
             f"(tests/monkey/monkey_script.py)".encode()]
    valid = invalid = 0
    invalid_lines, checkpoints, counts = [], [], {}
    target_invalid = round(opts.commands * opts.invalid_ratio)
    while valid < opts.commands:
        # invalid lines spread through the script, in proportion
        if invalid < target_invalid and m.r.random() < opts.invalid_ratio / (1 + opts.invalid_ratio):
            line = m.invalid()
        else:
            line = m.command(m.r.choices(names, w)[0])
        kind = classify(line)
        if kind == "skip" or forbidden(kind) or any(x.search(line) for x in excludes):
            continue
        lines.append(line)
        if kind == "bad":
            invalid += 1
            invalid_lines.append(len(lines))
        else:
            valid += 1
            counts[kind[1]] = counts.get(kind[1], 0) + 1
            if opts.checkpoint_every > 0 and valid % opts.checkpoint_every == 0 and valid < opts.commands:
                name = f"monkey-checkpoint-{valid:06d}.json"
                lines.append(f"layout {name}".encode())
                checkpoints.append({"line": len(lines), "after_commands": valid, "file": name})
    lines.append(b"layout monkey-checkpoint-final.json")
    checkpoints.append({"line": len(lines), "after_commands": valid, "file": "monkey-checkpoint-final.json"})
    lines.append(b"quit")
    data = b"\n".join(lines) + b"\n"
    if len(data) > opts.max_bytes:
        sys.exit(f"monkey_script.py: the script would be {len(data)} bytes, over --max-bytes {opts.max_bytes} "
                 "(the app reads at most 1 MiB): lower --commands or --long-bytes")
    with open(opts.out, "wb") as f:
        f.write(data)
    manifest = {"seed": opts.seed, "commands": valid, "invalid": invalid, "lines": len(lines),
                "bytes": len(data), "quit_line": len(lines), "checkpoints": checkpoints,
                "invalid_lines": invalid_lines, "per_command": dict(sorted(counts.items())),
                "stages": opts.stages, "grammar_commands": sorted(GRAMMAR)}
    with open(opts.manifest or opts.out + ".json", "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"monkey_script.py: wrote {opts.out}: {valid} commands the parser accepts, {invalid} it rejects, "
          f"{len(checkpoints)} checkpoints, quit on line {len(lines)}, {len(data)} bytes")


if __name__ == "__main__":
    main()
