#!/usr/bin/python3
"""Train the study note's "Transformer from scratch" on Multi30k with PyTorch, as a learner of the note would.

    /usr/bin/python3 tests/reference/train_note_transformer.py --data ../shared/data/multi30k/tok --out DIR \\
        [--embed-size 256 --heads 8 --layers 3 --forward-expansion 2 --max-length 140 --epochs 10 --minutes 30]

The model is tests/reference/families.py's NoteTransformer: the note's own modules (../shared/seeds/
001_65bd59ad5c71ccfe.txt), quirks included. Training as the note's notebook does: Adam, cross-entropy over the
log-softmax output ignoring <pad>, teacher forcing (decoder input without the last token, target without
<sos>), batches of sentences padded to their longest. Writes into DIR (which must not exist yet: nothing is
overwritten):
  transformer.pt           torch.save(model.state_dict()), the file a learner of the note has
  src_vocab.txt, tgt_vocab.txt   one token per line (line number = id): <unk> <pad> <sos> <eos>, then the words
                           seen at least --min-freq times in the training set
  log.txt                  the command, each epoch's training and validation loss, a greedy translation
Then: tools/convert_pytorch.py --family from-scratch --checkpoint DIR/transformer.pt --src-vocab
DIR/src_vocab.txt --tgt-vocab DIR/tgt_vocab.txt --out note.safetensors --max-length N --src-lang de --tgt-lang en
Needs Debian's python3-torch (/usr/bin/python3). Data: Multi30k's tokenized, lowercased files
(train.lc.norm.tok.{de,en}, val.lc.norm.tok.*), as the app's tokenizer reproduces them.
"""
import argparse
import collections
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # families.py lies beside this script
import families  # noqa: E402

SPECIALS = ["<unk>", "<pad>", "<sos>", "<eos>"]
UNK, PAD, SOS, EOS = 0, 1, 2, 3


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f.read().split("\n") if line.strip()]


def vocabulary(sentences, min_freq):
    counts = collections.Counter(w for s in sentences for w in s)
    return SPECIALS + sorted(w for w, n in counts.items() if n >= min_freq and w not in SPECIALS)


def encode(sentence, index, max_length):
    ids = [SOS] + [index.get(w, UNK) for w in sentence][: max_length - 2] + [EOS]
    return ids


def batches(pairs, size, shuffle):
    order = list(range(len(pairs)))
    if shuffle:
        random.shuffle(order)
    for start in range(0, len(order), size):
        chunk = [pairs[i] for i in order[start:start + size]]
        src_len = max(len(s) for s, _ in chunk)
        tgt_len = max(len(t) for _, t in chunk)
        src = torch.tensor([s + [PAD] * (src_len - len(s)) for s, _ in chunk])
        tgt = torch.tensor([t + [PAD] * (tgt_len - len(t)) for _, t in chunk])
        yield src, tgt


def loss_of(model, src, tgt):
    out = model(src, tgt[:, :-1])  # (N, T-1, Vt) log-probabilities
    return F.nll_loss(out.reshape(-1, out.shape[-1]), tgt[:, 1:].reshape(-1), ignore_index=PAD)


def greedy(model, src_ids, max_steps):
    src = torch.tensor([src_ids])
    enc = model.encode(src)
    out = [SOS]
    for _ in range(max_steps):
        token = int(model.decode(src, torch.tensor([out]), enc)[0, -1].argmax())
        out.append(token)
        if token == EOS:
            break
    return out[1:]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="folder with train.lc.norm.tok.{de,en} and val.lc.norm.tok.{de,en}")
    p.add_argument("--out", required=True, help="a new folder for the state_dict, vocabularies and log")
    p.add_argument("--embed-size", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--forward-expansion", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--max-length", type=int, default=140)
    p.add_argument("--min-freq", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--minutes", type=float, default=0, help="stop after the epoch that passes this time (0: no limit)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if os.path.exists(args.out):
        sys.exit(f"train_note_transformer.py: {args.out} exists; give a new folder (nothing is overwritten)")
    for name in ("train.lc.norm.tok.de", "train.lc.norm.tok.en"):
        if not os.path.isfile(os.path.join(args.data, name)):
            sys.exit(f"train_note_transformer.py: {args.data} has no {name}")
    if args.embed_size % args.heads:
        sys.exit("train_note_transformer.py: --heads must divide --embed-size")
    if args.threads:
        torch.set_num_threads(args.threads)
    random.seed(args.seed)
    torch.manual_seed(args.seed)

    train_de, train_en = (read_lines(os.path.join(args.data, f"train.lc.norm.tok.{l}")) for l in ("de", "en"))
    src_vocab, tgt_vocab = vocabulary(train_de, args.min_freq), vocabulary(train_en, args.min_freq)
    src_index = {w: i for i, w in enumerate(src_vocab)}
    tgt_index = {w: i for i, w in enumerate(tgt_vocab)}
    train = [(encode(s, src_index, args.max_length), encode(t, tgt_index, args.max_length))
             for s, t in zip(train_de, train_en)]
    valid = []
    if os.path.isfile(os.path.join(args.data, "val.lc.norm.tok.de")):
        val_de, val_en = (read_lines(os.path.join(args.data, f"val.lc.norm.tok.{l}")) for l in ("de", "en"))
        valid = [(encode(s, src_index, args.max_length), encode(t, tgt_index, args.max_length))
                 for s, t in zip(val_de, val_en)]

    os.makedirs(args.out)
    log = open(os.path.join(args.out, "log.txt"), "w", encoding="utf-8")

    def say(text):
        print(text, flush=True)
        log.write(text + "\n")
        log.flush()

    say("command: /usr/bin/python3 " + " ".join(sys.argv))
    cfg = families.from_scratch_config(args.embed_size, args.heads, args.layers, args.forward_expansion,
                                       len(src_vocab), len(tgt_vocab), max_length=args.max_length)
    model = families.build_from_scratch(cfg, dropout=args.dropout)
    params = sum(t.numel() for t in model.parameters())
    say(f"{len(train)} training pairs, vocabularies {len(src_vocab)} / {len(tgt_vocab)}, {params} parameters")
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    start = time.time()
    sample = train_de[0]
    for epoch in range(1, args.epochs + 1):
        model.train()
        total, count = 0.0, 0
        for src, tgt in batches(train, args.batch_size, True):
            optimizer.zero_grad()
            loss = loss_of(model, src, tgt)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            total, count = total + loss.item(), count + 1
        model.eval()
        with torch.no_grad():
            v = [loss_of(model, s, t).item() for s, t in batches(valid, args.batch_size, False)]
            words = [tgt_vocab[i] for i in greedy(model, encode(sample, src_index, args.max_length), 40)]
        say(f"epoch {epoch}: train loss {total / max(count, 1):.3f}, valid loss {sum(v) / max(len(v), 1):.3f}, "
            f"{time.time() - start:.0f} s; '{' '.join(sample)}' -> '{' '.join(words)}'")
        torch.save(model.state_dict(), os.path.join(args.out, "transformer.pt"))
        if args.minutes and time.time() - start > 60 * args.minutes:
            break
    for name, vocab in (("src_vocab.txt", src_vocab), ("tgt_vocab.txt", tgt_vocab)):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write("\n".join(vocab) + "\n")
    say(f"wrote {args.out}/transformer.pt, src_vocab.txt, tgt_vocab.txt")


if __name__ == "__main__":
    main()
