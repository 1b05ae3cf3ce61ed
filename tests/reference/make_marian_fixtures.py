#!/usr/bin/python3
"""Writes the Hugging Face Marian (opus-mt) fixtures: everything under tests/fixtures/marian/.

Development time only (Debian's python3-torch and python3-sentencepiece, run with /usr/bin/python3; `transformers`
is not needed and not used). The files are committed and read by the C++ tests of the Marian loader, so CI needs
neither torch nor sentencepiece. Run it with no arguments; it deletes the files it wrote before and writes them
again, deterministically (fixed seeds, one thread, fixed slices of the data).

What it writes, and why:

  tiny-de-en/          a tiny MarianMTModel folder in the hub's exact layout (as Helsinki-NLP/opus-mt-de-en has
                       it): config.json, generation_config.json, tokenizer_config.json, special_tokens_map.json,
                       vocab.json (one vocabulary shared by both sides), source.spm, target.spm, model.safetensors
                       (F32, metadata {"format": "pt"}) with Hugging Face's tensor names: model.shared.weight, both
                       embed_positions tables (as the hub's older files carry them), the layers, final_logits_bias;
                       no lm_head.weight and no embed_tokens copies (save_pretrained drops the tied duplicates:
                       of the names sharing storage it deletes those matching _tied_weights_keys, keeping
                       model.shared.weight). d_model 16, 4 heads, 2 + 2 layers, ffn 32, 64 positions,
                       max_length 24. The pad row of the embedding and the pad entry of final_logits_bias are zero,
                       as convert_marian_to_pytorch.add_emb_entries makes them.
  tiny-separate/       share_encoder_decoder_embeddings false, separate_vocabs true: vocab.json (source pieces)
                       and target_vocab.json (target pieces), model.encoder.embed_tokens.weight,
                       model.decoder.embed_tokens.weight and lm_head.weight equal to the decoder's (what
                       convert_marian_to_pytorch writes, as it clones the decoder embedding into lm_head; a later
                       save_pretrained of the tied model would leave lm_head.weight out, so a loader must accept
                       both), no embed_positions (newer save_pretrained leaves them out:
                       MarianMTModel._keys_to_ignore_on_save). d_model 24, 3 heads, 1 encoder and 2 decoder layers,
                       ffn 48, max_length 16; its pad row is random, not zero. Both vocabularies have the same size,
                       as every converted hub model has (convert_marian_to_pytorch refuses unequal dim-vocabs and
                       sets pad = the last id of both).
  <case>.trace.safetensors  (tiny-de-en: marian_plain, marian_heads_off, marian_no_causal, marian_no_positions,
                       marian_painted on "Drei Leute sitzen in einer Höhle." (test_2016 line 15); marian_unk on
                       "Ein Kind \U0001F94B im 漢 Wasser." (two <unk>); marian_long on the longest test_2016 line of
                       at most 24 pieces; tiny-separate: marian_separate_plain, marian_separate_heads_off on "Ein Kind
                       planscht im Wasser.")
                       one pass of the reference model over a really tokenized German sentence: ids.src, ids.tgt
                       (as F32) and every intermediate under Stepformer's trace names (docs/trace.md, listed below);
                       __metadata__: model (the folder name), interventions (JSON), family "marian", case,
                       source_text, src_pieces (JSON), greedy and beam (JSON lists of generated ids, WITHOUT the
                       decoder start token, WITH the final </s>), beam_width, length_penalty, max_length,
                       beam_variants (JSON list of {beam_width, length_penalty, beam} for other settings: widths
                       2, 4, 5 with length penalties 1.0, 0.6, 1.3).
                       greedy / beam are decoded with the case's interventions applied at every step (heads off,
                       causal mask off, positions off; the whole prefix recomputed each step); the painted case has
                       [] for both (a painted mask has the size of one pass). ids.tgt is the decoder start (pad)
                       followed by the first 4 tokens of the plain model's greedy output (the same in all cases of
                       one sentence), so the pass is one that decoding makes; the script asserts that each row's
                       processed argmax is the next greedy token.
  tokenization_test2016.de.json, tokenization_test2016.en.json
                       for every line of Multi30k's test_2016_flickr.{de,en}.gz (read from
                       /work/shared/data/multi30k/raw at test time, split on \n; the text itself is not stored; a
                       sha256 of the lines joined by \n is): "lines"[i] = [pieces, ids] (de) or [pieces, ids,
                       decoded] (en): the spm pieces (source.spm for de, target.spm for en, of tiny-de-en), the ids
                       through tiny-de-en/vocab.json WITHOUT the </s> that MarianTokenizer appends, and for English
                       spm decode_pieces(pieces); "hostile": lines of our own (empty, spaces, emoji, CJK, control
                       characters, tab / NBSP / CR, NFKC cases, a combining accent, very long words, the ▁ symbol
                       itself, digits) with their text, pieces, ids, decoded.

SentencePiece models: unigram (like Marian's), trained here with python3-sentencepiece 0.1.97, num_threads 1,
character_coverage 0.9995 (rare characters are unknown; runs of unknown characters become one unknown piece),
default ids <unk> 0 <s> 1 </s> 2 as OPUS-MT-train's spm_train makes them, on fixed slices of Multi30k's
train.{de,en}.gz (the data stays outside the repository): tiny-de-en on lines 1-10000 with vocab_size 200,
source.spm with nmt_nfkc (the real opus-mt normalizer and its precompiled charsmap), target.spm with the identity
normalizer (no charsmap: a nmt_nfkc model file is 240 kB, mostly that table, and the fixtures must stay under about
2 MB; English text hardly needs NFKC); tiny-separate on lines 10001-20000, vocab_size 180, identity on both sides.

Weights: randomise() of make_forward_fixtures.py (0.3 N(0, 1), LayerNorms 1 / 0 + 0.1 N(0, 1)) and a random
final_logits_bias (0.5 N(0, 1)), then TRAIN_STEPS = 300 steps of Adam (lr 0.01, 16 pairs a step, one pair at a
time, no dropout) on the same Multi30k slice: a purely random post-norm Marian collapses onto one token (every
decoder row alike; no seed gave anything but one repeated token up to max_length), while this short training
makes greedy and beam search produce varied tokens, stop on </s> by themselves or run into max_length, and differ
from each other. The loss is MarianMTModel's with labels (cross-entropy of the logits of shift_tokens_right(labels)
against labels; the pad row gets no gradient through padding_idx; final_logits_bias is a buffer and stays as drawn).

Tokenization, as MarianTokenizer does it (tokenization_marian.py): pieces = spm.encode(text, out_type=str) with the
source spm (the target spm for target text); id = vocab.json[piece], a piece missing from vocab.json -> the id of
"<unk>" (classic MarianTokenizer._convert_token_to_id: self.current_encoder.get(token, unk id); note that
transformers' main branch (tokenization_marian.py at commit 025722be) now falls back to spm.piece_to_id(piece),
which for an unknown piece is spm's unk id 0, i.e. Marian's "</s>": we follow the classic rule, as asked);
then </s> (id 0) is appended. No Moses normalisation: MarianTokenizer.normalize is not on the encoding path.
vocab.json: "</s>" 0, "<unk>" 1, then the pieces of source.spm in spm id order, then the pieces of target.spm not
already present, in spm id order (spm's own <unk> <s> </s> left out), and "<pad>" last; vocab_size = len(vocab).
Written like MarianTokenizer.save_vocabulary: json.dump(indent=2), ASCII with \\u escapes.

The model (a reference written after transformers' modeling_marian.py at commit 00b676f8, in our own code; each
class names the Hugging Face one it follows): embeddings E[id] * sqrt(d_model) (scale_embedding), sinusoidal
positions from MarianSinusoidalPositionalEmbedding._init_weight (float64 numpy, sin of pos / 10000^(2i/C) in
columns 0..C/2-1, cos in C/2..C-1, then cast to float32), added; post-norm layers as MarianEncoderLayer /
MarianDecoderLayer (self-attention, residual, LayerNorm; [cross-attention, residual, LayerNorm]; fc1, SiLU
("swish"), fc2, residual, LayerNorm), no final norms, no embedding norm; eager attention: scores = (q k^T) *
head_dim**-0.5, additive masks filled with finfo(float32).min as HF builds them, softmax, probs @ v; logits =
dec.out E_dec^T + final_logits_bias. The encoder mask comes from the tokenizer's attention mask (all ones for one
sentence); the decoder self-attention is causal only: no padding mask on the decoder ids, because
decoder_attention_mask is None in generate() and the decoder start token IS the pad id.
recorded_pass() walks the same modules step by step recording every intermediate (masks as 1 = blocked, applied as
-inf, which gives the same probabilities as finfo.min), and ASSERTS that its logits equal the modules' own forward
(HF-style additive masks and head_mask) within 1e-6 for every case.

Trace names recorded (docs/trace.md; Marian is post-norm with no final norms, so enc.final_norm_* and
dec.final_norm_* are absent; ffn_hidden is SiLU of ffn_hidden_pre; scores use q k^T * head_dim**-0.5):
  src.tok_embed src.pos enc.in
  enc.L.self_attn.{q,k,v,scores,mask,probs,head_out,heads_out,attn_out} enc.L.residual1 enc.L.norm1(+_mean,_std)
  enc.L.ffn_hidden_pre enc.L.ffn_hidden enc.L.ffn_out enc.L.residual2 enc.L.norm2(+_mean,_std) enc.L.out  enc.out
  tgt.tok_embed tgt.pos dec.in
  dec.L.self_attn.* dec.L.residual1 dec.L.norm1(+) dec.L.cross_attn.* dec.L.residual2 dec.L.norm2(+)
  dec.L.ffn_hidden_pre dec.L.ffn_hidden dec.L.ffn_out dec.L.residual3 dec.L.norm3(+) dec.L.out  dec.out
  logits probs
Interventions (Stepformer's semantics, as make_from_scratch_fixtures.py): heads_off ["enc.L.H", "dec.L.H",
"cross.L.H"] zero that head's probs @ V (head_out) before out_proj (scores and probs still traced; in HF terms the
head_mask / decoder_head_mask / cross_attn_head_mask of generate(), which multiply the probs by 0);
causal_mask false: no mask in decoder self-attention; positional_encoding false: positions zero on both sides;
padding_mask false: no pad key blocked (no pads here); custom_masks [{"where": "enc.L.H", "blocked": rows}]
replace that head's mask (1 = blocked; decoder rows and columns cover the decoder input).

Decoding: transformers' main branch, generation/utils.py at commit 000034a4 (the vectorised beam search of PR
#35802 that replaced BeamSearchScorer / BeamHypotheses), logits_process.py at commit 00857b6c. Its one difference
from the old scorer (v4.3x BeamHypotheses.is_done): the "can still improve" test takes the best OPEN beam's score,
where the old one took the best of all 2K candidates (an eos one included); on 200 searches over test_2016 with
this model both gave the same tokens. Processors that generate() builds from generation_config.json, in order:
NoBadWordsLogitsProcessor (bad_words_ids [[pad]]: scores + bias, the bias -inf at pad, 0 elsewhere),
ForcedEOSTokenLogitsProcessor
(forced_eos_token_id 0: when the decoder input has max_length - 1 tokens, every score becomes -inf and eos 0),
LogitNormalization last (renormalize_logits true, as the hub's opus-mt generation configs carry since
transformers PR #25459: scores.log_softmax(-1)). max_length counts the decoder start token. (Trap, kept out of
the fixtures: generate() replaces a max_length equal to GenerationConfig's default 20 by 20 + 1; our max_lengths
are 24 and 16, which it uses as they are.) Everything is float32, one sentence (batch 1); "vocab" V below is the
width of the logits (decoder_vocab_size).

  GREEDY (GenerationMixin._sample with do_sample False):
   1. seq = [decoder_start_token_id]   (= pad)
   2. loop:
   3.   x = logits of the last decoder row for input seq (whole prefix, causal mask, encoder output of the source)
   4.   x[pad] = x[pad] + (-inf)                                      (NoBadWords)
   5.   if len(seq) == max_length - 1: x = all -inf; x[eos] = 0        (ForcedEOS)
   6.   if renormalize_logits: x = log_softmax(x)                      (LogitNormalization)
   7.   t = argmax(x)   (torch.argmax: the lowest id among equal maxima)
   8.   seq.append(t)
   9.   stop if t == eos or len(seq) >= max_length                     (EosTokenCriteria, MaxLengthCriteria)
  10. output seq[1:]  (the fixtures' "greedy"; it ends with eos, forced at the latest at length max_length)

  BEAM (GenerationMixin._beam_search, do_sample False; K = num_beams, early_stopping False, length_penalty lp,
  prompt_len = 1 (the decoder start token), K2 = 2K candidates kept (max(2, 1 + number of eos ids) * K)):
   1. running[k] = [start] for k < K; running_score = [0, -1e9, ..., -1e9] (float32)
      finished slots f = 0..K-1: seq none, fscore -1e9, done false; improvable = true; cur_len = 1
   2. loop:
   3.   for each k: lp_k = log_softmax(logits of the last row of running[k]);
          lp_k = processors(lp_k) with cur_len (steps 4-6 of GREEDY, applied to the log-probs, then log_softmax
          again because of renormalize_logits)
   4.   acc[k * V + v] = lp_k[v] + running_score[k]
   5.   (val[j], idx[j]) = topk(acc, K2), j = 0..K2-1, values descending; beam[j] = idx // V, tok[j] = idx % V;
        cand[j] = running[beam[j]] + [tok[j]]
   6.   hit[j] = (tok[j] == eos) or (cur_len + 1 >= max_length)
   7.   next running: r[j] = val[j] + (hit[j] ? -1e9 : 0); take topk(r, K): running = those cand, running_score =
        those r values (descending)
   8.   finished update: s[j] = val[j] / (cur_len + 1 - prompt_len) ** lp      <- generated_len: the generated
        tokens INCLUDING the eos just chosen, EXCLUDING the decoder start token (main branch's
        _update_finished_beams; numerically the same as the old BeamHypotheses.add's hyp.shape[-1] with the start
        token and without the eos)
          s[j] += -1e9 if not improvable (its value from step 10 of the previous round);
          s[j] += -1e9 if not (hit[j] and j < K)   <- eos candidates ranked K or below are never kept (they exist
          only so that K beams stay open)
        merge the K finished slots with the K2 candidates (done = hit[j] and j < K), keep topk(K) of the scores
   9.   cur_len += 1
  10.   early-stop heuristic (early_stopping False): best = running_score[0] / (cur_len - prompt_len) ** lp;
        worst[f] = min over slots of fscore if done[f] else -1e9;
        improvable = improvable and any_f(best > worst[f])   (so: continue while a slot is empty or the best open
        beam's score at its current length beats the worst finished score)
  11.   stop if not improvable, or if every one of the K2 candidates hit a stopping criterion (max_length reached)
  12. output: the finished slot with the highest score (slot 0 of the topk), its generated tokens after the start
      token, eos included (the fixtures' "beam")
  At the first round only beam 0 is real (the others start at -1e9), so all K2 candidates extend it. torch.topk's
  order among exactly equal values is unspecified; with float scores that happens only among -inf / -1e9 fillers,
  which never reach the output.
  Since ForcedEOS makes eos the only finite candidate of every beam at cur_len = max_length - 1, every open beam
  is finished there (old scorer: finalize() adds the open beams), and the loop ends.
  Note: _beam_search takes V from config.get_text_config().vocab_size, the source vocabulary; that equals the
  logits' width for every converted model (equal vocab sizes), and for both fixture models.
"""
import gzip
import hashlib
import json
import math
import os
import struct
import sys
import tempfile

import numpy as np
import sentencepiece as spm
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_forward_fixtures import write_safetensors, randomise  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.normpath(os.path.join(HERE, "..", "fixtures", "marian"))
DATA_DIR = "/work/shared/data/multi30k/raw"
SPM_TRAIN_LINES = 10000
EOS_ID, UNK_ID = 0, 1  # Marian's vocab.json layout; <pad> is the last id
MODEL_FILES = ["config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json",
               "vocab.json", "target_vocab.json", "source.spm", "target.spm", "model.safetensors"]
NEG = -1.0e9  # the large negative number of _beam_search


# ---------------------------------------------------------------------------------------------------------
# SentencePiece models and Marian vocabularies
def read_lines(name, limit=None, start=0):
    out = []
    with gzip.open(os.path.join(DATA_DIR, name), "rt", encoding="utf-8", newline="\n") as f:
        for i, line in enumerate(f):
            if i < start:
                continue
            if limit is not None and len(out) >= limit:
                break
            out.append(line[:-1] if line.endswith("\n") else line)
    return out


def train_spm(tmp, name, lines, vocab_size, normalization):
    """A unigram model (Marian's kind) trained on exactly these lines in the folder tmp; returns the model file's
    bytes. The trainer writes its input path and model prefix into the model (trainer_spec), so it runs inside tmp
    with relative names, which keeps the files byte-identical from run to run."""
    here = os.getcwd()
    os.chdir(tmp)
    try:
        with open(name + ".txt", "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        spm.SentencePieceTrainer.train(input=name + ".txt", model_prefix=name, vocab_size=vocab_size,
                                       model_type="unigram", character_coverage=0.9995, num_threads=1,
                                       normalization_rule_name=normalization, minloglevel=2)
        with open(name + ".model", "rb") as f:
            return f.read()
    finally:
        os.chdir(here)


def load_spm(data):
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(data)
    return sp


def spm_pieces(sp):
    """The model's pieces in id order, without its control symbols (<unk> <s> </s>)."""
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())
            if not (sp.is_control(i) or sp.is_unknown(i))]


def marian_vocab(*piece_lists):
    """vocab.json as Marian's converter lays it out: </s> 0, <unk> 1, the pieces, <pad> last."""
    vocab = {"</s>": EOS_ID, "<unk>": UNK_ID}
    for pieces in piece_lists:
        for p in pieces:
            if p not in vocab:
                vocab[p] = len(vocab)
    vocab["<pad>"] = len(vocab)
    return vocab


def marian_encode(sp, vocab, text):
    """MarianTokenizer's encoding without the appended </s>: (pieces, ids); unknown pieces -> <unk>."""
    pieces = sp.encode(text, out_type=str)
    return pieces, [vocab.get(p, vocab["<unk>"]) for p in pieces]


def marian_decode(sp, id_to_piece, ids):
    """Generated ids to text, as tokenizer.decode(ids, skip_special_tokens=True) does: spm decode of the pieces."""
    pieces = [id_to_piece[i] for i in ids if id_to_piece[i] not in ("</s>", "<unk>", "<pad>")]
    return sp.decode_pieces(pieces).replace("\u2581", " ").strip()


# ---------------------------------------------------------------------------------------------------------
# The reference model. Module and parameter names follow modeling_marian.py so that state_dict() gives the hub's
# tensor names; the forward methods follow Hugging Face's eager code path line by line.
def sinusoidal_table(n_pos, dim):
    """MarianSinusoidalPositionalEmbedding._init_weight: float64 angles pos / 10000^(2*(j//2)/dim), sin of the even
    columns into the first half, cos of the odd columns into the second half, then float32."""
    angles = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out = torch.empty(n_pos, dim, dtype=torch.float32)
    half = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out[:, 0:half] = torch.FloatTensor(np.sin(angles[:, 0::2]))
    out[:, half:] = torch.FloatTensor(np.cos(angles[:, 1::2]))
    return out


class Attention(nn.Module):
    """MarianAttention (BartAttention) with eager_attention_forward, no cache, no dropout."""

    def __init__(self, dim, heads):
        super().__init__()
        self.num_heads, self.head_dim = heads, dim // heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.q_proj = nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)

    def split(self, x):  # (B, N, C) -> (B, H, N, D), as .view(bsz, len, -1, head_dim).transpose(1, 2)
        return x.view(x.shape[0], x.shape[1], -1, self.head_dim).transpose(1, 2)

    def forward(self, hidden, key_value=None, attention_mask=None, layer_head_mask=None):
        bsz, tgt_len = hidden.shape[:2]
        current = key_value if key_value is not None else hidden
        q = self.split(self.q_proj(hidden))
        k = self.split(self.k_proj(current))
        v = self.split(self.v_proj(current))
        weights = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        if attention_mask is not None:
            weights = weights + attention_mask
        weights = F.softmax(weights, dim=-1)
        if layer_head_mask is not None:
            weights = weights * layer_head_mask.view(1, -1, 1, 1)
        out = torch.matmul(weights, v).transpose(1, 2).contiguous()
        return self.out_proj(out.reshape(bsz, tgt_len, -1).contiguous())


class EncoderLayer(nn.Module):
    """MarianEncoderLayer (post-norm)."""

    def __init__(self, c):
        super().__init__()
        self.self_attn = Attention(c["d_model"], c["encoder_attention_heads"])
        self.self_attn_layer_norm = nn.LayerNorm(c["d_model"])
        self.fc1 = nn.Linear(c["d_model"], c["encoder_ffn_dim"])
        self.fc2 = nn.Linear(c["encoder_ffn_dim"], c["d_model"])
        self.final_layer_norm = nn.LayerNorm(c["d_model"])

    def forward(self, hidden, attention_mask, layer_head_mask=None):
        residual = hidden
        hidden = self.self_attn(hidden, attention_mask=attention_mask, layer_head_mask=layer_head_mask)
        hidden = self.self_attn_layer_norm(residual + hidden)
        residual = hidden
        hidden = self.fc2(F.silu(self.fc1(hidden)))
        return self.final_layer_norm(residual + hidden)


class DecoderLayer(nn.Module):
    """MarianDecoderLayer (post-norm, self-attention, cross-attention, feed-forward)."""

    def __init__(self, c):
        super().__init__()
        self.self_attn = Attention(c["d_model"], c["decoder_attention_heads"])
        self.self_attn_layer_norm = nn.LayerNorm(c["d_model"])
        self.encoder_attn = Attention(c["d_model"], c["decoder_attention_heads"])
        self.encoder_attn_layer_norm = nn.LayerNorm(c["d_model"])
        self.fc1 = nn.Linear(c["d_model"], c["decoder_ffn_dim"])
        self.fc2 = nn.Linear(c["decoder_ffn_dim"], c["d_model"])
        self.final_layer_norm = nn.LayerNorm(c["d_model"])

    def forward(self, hidden, attention_mask, encoder_hidden, encoder_attention_mask, layer_head_mask=None,
                cross_attn_layer_head_mask=None):
        residual = hidden
        hidden = self.self_attn(hidden, attention_mask=attention_mask, layer_head_mask=layer_head_mask)
        hidden = self.self_attn_layer_norm(residual + hidden)
        residual = hidden
        hidden = self.encoder_attn(hidden, key_value=encoder_hidden, attention_mask=encoder_attention_mask,
                                   layer_head_mask=cross_attn_layer_head_mask)
        hidden = self.encoder_attn_layer_norm(residual + hidden)
        residual = hidden
        hidden = self.fc2(F.silu(self.fc1(hidden)))
        return self.final_layer_norm(residual + hidden)


class Stack(nn.Module):
    """MarianEncoder / MarianDecoder: embed_tokens (shared or own), embed_positions (a buffer here: not trained),
    layers."""

    def __init__(self, c, layer, n_layers, vocab_size, embed_tokens):
        super().__init__()
        self.embed_scale = math.sqrt(c["d_model"]) if c["scale_embedding"] else 1.0
        self.embed_tokens = embed_tokens if embed_tokens is not None else \
            nn.Embedding(vocab_size, c["d_model"], padding_idx=c["pad_token_id"])
        self.register_buffer("embed_positions", sinusoidal_table(c["max_position_embeddings"], c["d_model"]))
        self.layers = nn.ModuleList([layer(c) for _ in range(n_layers)])


class MarianReference(nn.Module):
    """MarianMTModel: model.{shared, encoder, decoder}, final_logits_bias, the output projection tied to the
    decoder's input embedding (tie_word_embeddings true), as MarianMTModel.tie_weights ties lm_head."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = nn.Module()
        if c["share_encoder_decoder_embeddings"]:
            self.model.shared = nn.Embedding(c["vocab_size"], c["d_model"], padding_idx=c["pad_token_id"])
            enc_embed = dec_embed = self.model.shared
        else:
            enc_embed, dec_embed = None, None
        self.model.encoder = Stack(c, EncoderLayer, c["encoder_layers"], c["vocab_size"], enc_embed)
        self.model.decoder = Stack(c, DecoderLayer, c["decoder_layers"], c["decoder_vocab_size"], dec_embed)
        self.register_buffer("final_logits_bias", torch.zeros(1, c["decoder_vocab_size"]))

    # -- the plain forward, Hugging Face's way (additive masks of finfo.min, head masks on the probabilities) ----
    def hf_masks(self, S, T, iv, kinds):
        """The 4D additive masks of the attention blocks of `kinds` (enc, dec, cross) per layer:
        _prepare_4d_attention_mask of the all-ones source mask (no key blocked) for enc and cross, the causal mask
        of _prepare_4d_causal_attention_mask_with_cache_position for dec; with the interventions: no causal mask,
        and painted heads (a per-head 4D mask, which eager attention adds as it is)."""
        lo = torch.finfo(torch.float32).min
        c = self.c
        base = {"enc": lambda: torch.zeros(1, 1, S, S), "cross": lambda: torch.zeros(1, 1, T, S),
                "dec": lambda: torch.triu(torch.full((T, T), lo), diagonal=1)[None, None]
                if iv.get("causal_mask", True) else torch.zeros(1, 1, T, T)}
        masks = {}
        for kind in kinds:
            n_layers = c["encoder_layers"] if kind == "enc" else c["decoder_layers"]
            for l in range(n_layers):
                masks[(kind, l)] = base[kind]()
        for m in iv.get("custom_masks", []):
            kind, l, h = parse_where(m["where"])
            if kind not in kinds:
                continue
            heads = c["encoder_attention_heads"] if kind == "enc" else c["decoder_attention_heads"]
            full = masks[(kind, l)].expand(1, heads, -1, -1).clone()
            blocked = torch.tensor(m["blocked"], dtype=torch.bool)
            full[0, h] = torch.where(blocked, torch.tensor(lo), torch.tensor(0.0))
            masks[(kind, l)] = full
        return masks

    def head_masks(self, iv):
        """head_mask, decoder_head_mask, cross_attn_head_mask of MarianModel.forward: (layers, heads), 0 = off."""
        c = self.c
        hm = {"enc": torch.ones(c["encoder_layers"], c["encoder_attention_heads"]),
              "dec": torch.ones(c["decoder_layers"], c["decoder_attention_heads"]),
              "cross": torch.ones(c["decoder_layers"], c["decoder_attention_heads"])}
        for ref in iv.get("heads_off", []):
            kind, l, h = parse_where(ref)
            hm[kind][l, h] = 0.0
        return hm

    def encode(self, src, iv):
        """MarianEncoder.forward: src (1, S) -> (1, S, C)."""
        enc = self.model.encoder
        S = src.shape[1]
        masks, hm = self.hf_masks(S, 0, iv, ("enc",)), self.head_masks(iv)
        hidden = enc.embed_tokens(src) * enc.embed_scale
        pos = enc.embed_positions[:S] if iv.get("positional_encoding", True) else torch.zeros(S, self.c["d_model"])
        hidden = hidden + pos
        for l, layer in enumerate(enc.layers):
            hidden = layer(hidden, masks[("enc", l)], hm["enc"][l])
        return hidden

    def decode(self, tgt, enc_out, iv):
        """MarianDecoder.forward + lm_head + final_logits_bias: tgt (1, T) -> logits (1, T, V)."""
        dec = self.model.decoder
        S, T = enc_out.shape[1], tgt.shape[1]
        masks, hm = self.hf_masks(S, T, iv, ("dec", "cross")), self.head_masks(iv)
        hidden = dec.embed_tokens(tgt) * dec.embed_scale
        pos = dec.embed_positions[:T] if iv.get("positional_encoding", True) else torch.zeros(T, self.c["d_model"])
        hidden = hidden + pos
        for l, layer in enumerate(dec.layers):
            hidden = layer(hidden, masks[("dec", l)], enc_out, masks[("cross", l)], hm["dec"][l], hm["cross"][l])
        return F.linear(hidden, dec.embed_tokens.weight) + self.final_logits_bias

    def forward(self, src, tgt, iv):
        return self.decode(tgt, self.encode(src, iv), iv)


def parse_where(ref):
    kind, layer, head = ref.split(".")
    assert kind in ("enc", "dec", "cross"), ref
    return kind, int(layer), int(head)


# ---------------------------------------------------------------------------------------------------------
# The recorded pass: the same modules, step by step, every intermediate under its trace name.
def recorded_pass(model, src, tgt, iv):
    c = model.c
    tr = {}
    S, T = len(src), len(tgt)
    positions = iv.get("positional_encoding", True)
    heads_off = {parse_where(r) for r in iv.get("heads_off", [])}
    painted = {}
    for m in iv.get("custom_masks", []):
        kind, l, h = parse_where(m["where"])
        painted[(kind, l, h)] = torch.tensor(m["blocked"], dtype=torch.bool)

    # Stepformer's masks, 1 = blocked (docs/trace.md). No pads in a single tokenized sentence; padding_mask off
    # would unblock pad keys, of which there are none.
    pad_src = torch.zeros(S, dtype=torch.bool)
    enc_blocked = pad_src.unsqueeze(0).expand(S, S)
    cross_blocked = pad_src.unsqueeze(0).expand(T, S)
    dec_blocked = torch.zeros(T, T, dtype=torch.bool)  # no padding mask on decoder ids (see the docstring)
    if iv.get("causal_mask", True):
        dec_blocked = dec_blocked | torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)

    def layer_norm(x, ln, name):
        out = ln(x)
        tr[name] = out
        tr[name + "_mean"] = x.mean(-1)
        tr[name + "_std"] = torch.sqrt(x.var(-1, unbiased=False) + ln.eps)
        return out

    def attention(att, x, kv, kind, layer, blocked, name):
        H, D = att.num_heads, att.head_dim
        q = att.split(att.q_proj(x.unsqueeze(0)))[0]      # (H, Tq, D)
        k = att.split(att.k_proj(kv.unsqueeze(0)))[0]
        v = att.split(att.v_proj(kv.unsqueeze(0)))[0]
        scores = torch.matmul(q, k.transpose(1, 2)) * att.scaling
        mask = blocked.unsqueeze(0).expand(H, -1, -1).clone()
        for h in range(H):
            if (kind, layer, h) in painted:
                mask[h] = painted[(kind, layer, h)]
        assert not mask.all(-1).any(), f"{name}: a row with every key blocked"
        probs = torch.softmax(scores.masked_fill(mask, float("-inf")), -1)
        head_out = torch.matmul(probs, v)
        for h in range(H):
            if (kind, layer, h) in heads_off:
                head_out[h] = 0.0
        heads_out = head_out.transpose(0, 1).reshape(x.shape[0], H * D)
        attn_out = att.out_proj(heads_out)
        for n, t in (("q", q), ("k", k), ("v", v), ("scores", scores), ("mask", mask.float()), ("probs", probs),
                     ("head_out", head_out), ("heads_out", heads_out), ("attn_out", attn_out)):
            tr[f"{name}.{n}"] = t
        return attn_out

    def ffn(layer, x, name):
        hidden_pre = layer.fc1(x)
        hidden = F.silu(hidden_pre)
        out = layer.fc2(hidden)
        tr[name + ".ffn_hidden_pre"], tr[name + ".ffn_hidden"], tr[name + ".ffn_out"] = hidden_pre, hidden, out
        return out

    def embed(stack, ids, name):
        tok = stack.embed_tokens(ids) * stack.embed_scale
        pos = stack.embed_positions[: len(ids)] if positions else torch.zeros(len(ids), c["d_model"])
        tr[name + ".tok_embed"], tr[name + ".pos"] = tok, pos
        return tok + pos

    # MarianEncoder.forward / MarianEncoderLayer.forward
    x = embed(model.model.encoder, src, "src")
    tr["enc.in"] = x
    for l, layer in enumerate(model.model.encoder.layers):
        p = f"enc.{l}"
        r1 = x + attention(layer.self_attn, x, x, "enc", l, enc_blocked, p + ".self_attn")
        n1 = layer_norm(r1, layer.self_attn_layer_norm, p + ".norm1")
        r2 = n1 + ffn(layer, n1, p)
        x = layer_norm(r2, layer.final_layer_norm, p + ".norm2")
        tr[p + ".residual1"], tr[p + ".residual2"], tr[p + ".out"] = r1, r2, x
    tr["enc.out"] = mem = x

    # MarianDecoder.forward / MarianDecoderLayer.forward
    y = embed(model.model.decoder, tgt, "tgt")
    tr["dec.in"] = y
    for l, layer in enumerate(model.model.decoder.layers):
        p = f"dec.{l}"
        r1 = y + attention(layer.self_attn, y, y, "dec", l, dec_blocked, p + ".self_attn")
        n1 = layer_norm(r1, layer.self_attn_layer_norm, p + ".norm1")
        r2 = n1 + attention(layer.encoder_attn, n1, mem, "cross", l, cross_blocked, p + ".cross_attn")
        n2 = layer_norm(r2, layer.encoder_attn_layer_norm, p + ".norm2")
        r3 = n2 + ffn(layer, n2, p)
        y = layer_norm(r3, layer.final_layer_norm, p + ".norm3")
        tr[p + ".residual1"], tr[p + ".residual2"], tr[p + ".residual3"], tr[p + ".out"] = r1, r2, r3, y
    tr["dec.out"] = y
    # MarianMTModel.forward: lm_head (tied to the decoder's embedding) + final_logits_bias
    tr["logits"] = F.linear(y, model.model.decoder.embed_tokens.weight) + model.final_logits_bias[0]
    tr["probs"] = torch.softmax(tr["logits"], -1)

    # The modules' own forward (Hugging Face's masks and head masks) must give the same numbers.
    own_enc = model.encode(src.unsqueeze(0), iv)[0]
    own = model.forward(src.unsqueeze(0), tgt.unsqueeze(0), iv)[0]
    for name, mine, theirs in (("enc.out", tr["enc.out"], own_enc), ("logits", tr["logits"], own)):
        err = (mine - theirs).abs().max().item()
        assert err <= 1e-6, f"the recorded {name} differs from the modules' forward by {err}"
    return tr


# ---------------------------------------------------------------------------------------------------------
# Decoding, as transformers' generate() does it (see the docstring for the pseudo-code).
class Processors:
    """The LogitsProcessorList generate() builds from generation_config.json for Marian."""

    def __init__(self, gen):
        self.bad = [ids[0] for ids in gen["bad_words_ids"]]
        assert all(len(ids) == 1 for ids in gen["bad_words_ids"])
        self.max_length, self.eos = gen["max_length"], gen["forced_eos_token_id"]
        self.renormalize = gen.get("renormalize_logits", False)

    def __call__(self, cur_len, scores):  # scores (N, V)
        bias = torch.zeros_like(scores)  # NoBadWordsLogitsProcessor (SequenceBiasLogitsProcessor, length-1 ids)
        bias[:, self.bad] = float("-inf")
        scores = scores + bias
        if cur_len == self.max_length - 1:  # ForcedEOSTokenLogitsProcessor
            scores = torch.full_like(scores, float("-inf"))
            scores[:, self.eos] = 0
        if self.renormalize:  # LogitNormalization, always last
            scores = scores.log_softmax(dim=-1)
        return scores


def last_logits(model, enc_out, seq, iv):
    with torch.no_grad():
        return model.decode(torch.tensor([seq]), enc_out, iv)[0, -1]


def greedy(model, src, gen, iv):
    """GenerationMixin._sample with do_sample False (pseudo-code GREEDY)."""
    proc = Processors(gen)
    with torch.no_grad():
        enc_out = model.encode(src.unsqueeze(0), iv)
    seq = [gen["decoder_start_token_id"]]
    while True:
        scores = proc(len(seq), last_logits(model, enc_out, seq, iv).unsqueeze(0))
        token = int(torch.argmax(scores, dim=-1)[0])
        seq.append(token)
        if token == gen["eos_token_id"] or len(seq) >= gen["max_length"]:
            return seq[1:]


def beam_search(model, src, gen, iv, num_beams, length_penalty, early_stopping=False):
    """GenerationMixin._beam_search of transformers' main branch for one sentence (pseudo-code BEAM); the
    tensors are float32 and the operations in its order, so the scores are its scores."""
    proc = Processors(gen)
    eos, max_length, K = gen["eos_token_id"], gen["max_length"], num_beams
    K2 = max(2, 1 + 1) * K  # one eos id
    top_k_mask = torch.arange(K2) < K
    with torch.no_grad():
        enc_out = model.encode(src.unsqueeze(0), iv)
    prompt_len = cur_len = 1
    running = [[gen["decoder_start_token_id"]] for _ in range(K)]
    running_scores = torch.zeros(K)
    running_scores[1:] = NEG
    fin_seqs = [None] * K
    fin_scores = torch.full((K,), NEG)
    fin_done = torch.zeros(K, dtype=torch.bool)
    improvable = torch.tensor(True)
    while True:
        logits = torch.stack([last_logits(model, enc_out, s, iv) for s in running])
        log_probs = proc(cur_len, F.log_softmax(logits, dim=-1))
        V = log_probs.shape[-1]
        acc = (log_probs + running_scores[:, None]).reshape(K * V)
        top_vals, top_idx = torch.topk(acc, K2)
        beams, tokens = top_idx // V, top_idx % V
        cands = [running[b] + [t] for b, t in zip(beams.tolist(), tokens.tolist())]
        hits = (tokens == eos) | torch.tensor(cur_len + 1 >= max_length)
        # _get_running_beams_for_next_iteration
        alive = top_vals + hits.to(torch.float32) * NEG
        nxt = torch.topk(alive, K)[1]
        running, running_scores = [cands[i] for i in nxt.tolist()], alive[nxt]
        # _update_finished_beams
        just = hits & top_k_mask
        scored = top_vals / ((cur_len + 1 - prompt_len) ** length_penalty)
        full = bool(fin_done.all()) and early_stopping is True
        scored = scored + torch.tensor(float(full)) * NEG
        scored = scored + (~improvable).to(torch.float32) * NEG
        scored = scored + (~just) * NEG
        merged_scores = torch.cat((fin_scores, scored))
        merged_seqs = fin_seqs + cands
        merged_done = torch.cat((fin_done, just))
        keep = torch.topk(merged_scores, K)[1]
        fin_seqs = [merged_seqs[i] for i in keep.tolist()]
        fin_scores, fin_done = merged_scores[keep], merged_done[keep]
        cur_len += 1
        # _check_early_stop_heuristic and _beam_search_has_unfinished_sequences
        if early_stopping == "never" and length_penalty > 0.0:
            best_len = max_length - prompt_len
        else:
            best_len = cur_len - prompt_len
        best = running_scores[:1] / (best_len ** length_penalty)
        worst = torch.where(fin_done, torch.min(fin_scores), torch.tensor(NEG))
        improvable = improvable & torch.any(best > worst)
        open_beam = not (bool(fin_done.all()) and early_stopping is True)
        if not (bool(improvable) and open_beam and not bool(hits.all())):
            break
    best_seq = fin_seqs[0]
    assert best_seq is not None and bool(fin_done[0]), "beam search ended without a finished hypothesis"
    return best_seq[1:]


# ---------------------------------------------------------------------------------------------------------
# Model folders in the hub's layout
def hf_config(c, name_or_path):
    """config.json as save_pretrained writes a converted opus-mt model's config (sorted keys, indent 2)."""
    return {
        "_name_or_path": name_or_path,
        "activation_dropout": 0.0,
        "activation_function": "swish",
        "add_bias_logits": False,
        "add_final_layer_norm": False,
        "architectures": ["MarianMTModel"],
        "attention_dropout": 0.0,
        "bad_words_ids": [[c["pad_token_id"]]],
        "bos_token_id": 0,
        "classif_dropout": 0.0,
        "classifier_dropout": 0.0,
        "d_model": c["d_model"],
        "decoder_attention_heads": c["decoder_attention_heads"],
        "decoder_ffn_dim": c["decoder_ffn_dim"],
        "decoder_layerdrop": 0.0,
        "decoder_layers": c["decoder_layers"],
        "decoder_start_token_id": c["pad_token_id"],
        "decoder_vocab_size": c["decoder_vocab_size"],
        "dropout": 0.1,
        "encoder_attention_heads": c["encoder_attention_heads"],
        "encoder_ffn_dim": c["encoder_ffn_dim"],
        "encoder_layerdrop": 0.0,
        "encoder_layers": c["encoder_layers"],
        "eos_token_id": EOS_ID,
        "forced_eos_token_id": EOS_ID,
        "gradient_checkpointing": False,
        "id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"},
        "init_std": 0.02,
        "is_encoder_decoder": True,
        "label2id": {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2},
        "max_length": c["max_length"],
        "max_position_embeddings": c["max_position_embeddings"],
        "model_type": "marian",
        "normalize_before": False,
        "normalize_embedding": False,
        "num_beams": c["num_beams"],
        "num_hidden_layers": c["encoder_layers"],
        "pad_token_id": c["pad_token_id"],
        "scale_embedding": True,
        "share_encoder_decoder_embeddings": c["share_encoder_decoder_embeddings"],
        "static_position_embeddings": True,
        "torch_dtype": "float32",
        "transformers_version": "4.34.0.dev0",
        "use_cache": True,
        "vocab_size": c["vocab_size"],
    }


def generation_config(c):
    """generation_config.json as the hub's opus-mt models carry it."""
    return {
        "bad_words_ids": [[c["pad_token_id"]]],
        "bos_token_id": 0,
        "decoder_start_token_id": c["pad_token_id"],
        "eos_token_id": EOS_ID,
        "forced_eos_token_id": EOS_ID,
        "max_length": c["max_length"],
        "num_beams": c["num_beams"],
        "pad_token_id": c["pad_token_id"],
        "renormalize_logits": True,
        "transformers_version": "4.34.0.dev0",
    }


# The MarianConfig.__init__ arguments (configuration_marian.py); config.json must carry every one of them.
MARIAN_CONFIG_ARGS = ["vocab_size", "decoder_vocab_size", "max_position_embeddings", "encoder_layers",
                      "encoder_ffn_dim", "encoder_attention_heads", "decoder_layers", "decoder_ffn_dim",
                      "decoder_attention_heads", "encoder_layerdrop", "decoder_layerdrop", "use_cache",
                      "is_encoder_decoder", "activation_function", "d_model", "dropout", "attention_dropout",
                      "activation_dropout", "init_std", "decoder_start_token_id", "scale_embedding", "pad_token_id",
                      "eos_token_id", "forced_eos_token_id", "share_encoder_decoder_embeddings"]


def write_json(path, obj, ensure_ascii=True, sort_keys=True):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, indent=2, sort_keys=sort_keys, ensure_ascii=ensure_ascii) + "\n")


def hub_tensors(model):
    """The tensors save_pretrained would write (see the docstring for which)."""
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    out = {}
    if model.c["share_encoder_decoder_embeddings"]:
        out["model.shared.weight"] = sd["model.shared.weight"]
        out["model.encoder.embed_positions.weight"] = sd["model.encoder.embed_positions"]
        out["model.decoder.embed_positions.weight"] = sd["model.decoder.embed_positions"]
    else:
        out["model.encoder.embed_tokens.weight"] = sd["model.encoder.embed_tokens.weight"]
        out["model.decoder.embed_tokens.weight"] = sd["model.decoder.embed_tokens.weight"]
        out["lm_head.weight"] = sd["model.decoder.embed_tokens.weight"].clone()
    for k, v in sd.items():
        if ".layers." in k:
            out[k] = v
    out["final_logits_bias"] = sd["final_logits_bias"]
    return {k: out[k].numpy().astype(np.float32) for k in sorted(out)}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    out, end = {}, 0
    for name, h in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        a, b = h["data_offsets"]
        assert a == end, f"{path}: {name} does not follow the previous tensor"
        assert h["dtype"] == "F32"
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(h["shape"])
        end = b
    assert end == len(data), f"{path}: trailing bytes"
    return out, meta


def write_model_folder(folder, model, c, spms, vocabs, tokenizer_cfg):
    os.makedirs(folder, exist_ok=True)
    write_json(os.path.join(folder, "config.json"), hf_config(c, c["name_or_path"]))
    write_json(os.path.join(folder, "generation_config.json"), generation_config(c))
    write_json(os.path.join(folder, "tokenizer_config.json"), tokenizer_cfg, ensure_ascii=False)
    write_json(os.path.join(folder, "special_tokens_map.json"),
               {"eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"}, ensure_ascii=False)
    for fname, vocab in vocabs.items():
        with open(os.path.join(folder, fname), "w", encoding="utf-8") as f:
            json.dump(vocab, f, indent=2)  # MarianTokenizer.save_vocabulary's save_json
    for fname, data in spms.items():
        with open(os.path.join(folder, fname), "wb") as f:
            f.write(data)
    tensors = hub_tensors(model)
    path = os.path.join(folder, "model.safetensors")
    write_safetensors(path, tensors, {"format": "pt"})
    # Sanity: read back, compare with the model in memory; config keys; vocabularies contiguous.
    back, meta = read_safetensors(path)
    assert meta == {"format": "pt"} and sorted(back) == sorted(tensors)
    for k, v in tensors.items():
        assert np.array_equal(back[k], v), k
    sd = model.state_dict()
    key = "model.shared.weight" if c["share_encoder_decoder_embeddings"] else "model.decoder.embed_tokens.weight"
    assert np.array_equal(back[key], sd[key].numpy())
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    missing = [k for k in MARIAN_CONFIG_ARGS if k not in cfg]
    assert not missing, f"config.json lacks {missing}"
    for fname, vocab in vocabs.items():
        with open(os.path.join(folder, fname), encoding="utf-8") as f:
            loaded = json.load(f)
        assert sorted(loaded.values()) == list(range(len(loaded))), f"{fname}: ids not 0..V-1"
        assert loaded["</s>"] == 0 and loaded["<unk>"] == 1 and loaded["<pad>"] == len(loaded) - 1
    assert cfg["vocab_size"] == len(vocabs["vocab.json"])
    assert cfg["decoder_vocab_size"] == len(vocabs.get("target_vocab.json", vocabs["vocab.json"]))
    assert back["final_logits_bias"].shape == (1, cfg["decoder_vocab_size"])


def training_pairs(sp_src, vocab_src, sp_tgt, vocab_tgt, de_lines, en_lines, limit=40):
    """(input_ids, labels) as MarianTokenizer(text, text_target=...) makes them: both end with </s>."""
    pairs = []
    for de, en in zip(de_lines, en_lines):
        src = marian_encode(sp_src, vocab_src, de)[1] + [EOS_ID]
        tgt = marian_encode(sp_tgt, vocab_tgt, en)[1] + [EOS_ID]
        if len(src) <= limit and len(tgt) <= limit:
            pairs.append((torch.tensor(src), torch.tensor(tgt)))
    return pairs


def build_model(c, seed, zero_pad_row, pairs, lr=None):
    """randomise() (0.3 N(0, 1) weights, LayerNorm 1 / 0 + 0.1 N(0, 1)), a random final_logits_bias, then a short
    training run: a purely random post-norm Marian collapses onto one token (every decoder row alike), so
    TRAIN_STEPS steps of Adam on Multi30k pairs make greedy and beam search produce varied tokens and stop on
    </s> by themselves. The loss is MarianMTModel's with labels: cross-entropy of the logits of
    shift_tokens_right(labels) (decoder start = pad) against the labels; final_logits_bias is a buffer there
    and stays as drawn; the pad row of the embeddings gets no gradient (padding_idx)."""
    torch.manual_seed(seed)
    model = MarianReference(c)
    randomise(model, seed)
    g = torch.Generator().manual_seed(seed + 1000)
    with torch.no_grad():
        model.final_logits_bias.copy_(c["bias_scale"] * torch.randn(model.final_logits_bias.shape, generator=g))
        if zero_pad_row:  # convert_marian_to_pytorch.add_emb_entries appends a zero pad row and a zero bias
            pad = c["pad_token_id"]
            model.model.shared.weight[pad] = 0.0
            model.final_logits_bias[0, pad] = 0.0
    opt = torch.optim.Adam(model.parameters(), lr=lr or TRAIN_LR)
    model.train()
    k = 0
    for _ in range(TRAIN_STEPS):
        opt.zero_grad()
        for _ in range(TRAIN_PAIRS_PER_STEP):
            src, labels = pairs[k % len(pairs)]
            k += 1
            dec_in = torch.cat([torch.tensor([c["pad_token_id"]]), labels[:-1]])  # shift_tokens_right
            logits = model(src.unsqueeze(0), dec_in.unsqueeze(0), {})[0]
            (F.cross_entropy(logits, labels) / TRAIN_PAIRS_PER_STEP).backward()
        opt.step()
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


# ---------------------------------------------------------------------------------------------------------
# Trace cases
def write_case(case, folder_name, model, gen, sp_src, vocab_src, text, tgt_prefix, iv, beam_cfg, variants,
               id_to_piece, sp_tgt):
    pieces, ids = marian_encode(sp_src, vocab_src, text)
    src = torch.tensor(ids + [EOS_ID])
    assert len(src) <= model.c["max_position_embeddings"]
    decodable = not iv.get("custom_masks")
    with torch.no_grad():
        out_greedy = greedy(model, src, gen, iv) if decodable else []
        width, lp = beam_cfg
        out_beam = beam_search(model, src, gen, iv, width, lp) if decodable else []
        out_variants = [{"beam_width": w, "length_penalty": p,
                         "beam": beam_search(model, src, gen, iv, w, p) if decodable else []} for w, p in variants]
    if tgt_prefix is None:  # the plain model's greedy tokens (before </s>) make the decoder input
        body = out_greedy[:-1] if out_greedy and out_greedy[-1] == EOS_ID else out_greedy
        tgt_prefix = body[:4]
    tgt = torch.tensor([gen["decoder_start_token_id"]] + tgt_prefix)
    with torch.no_grad():
        tr = recorded_pass(model, src, tgt, iv)
    if decodable and not iv:
        # The pass is the one decoding makes: every row's processed argmax is the greedy token after it.
        proc = Processors(gen)
        for t in range(len(tgt) - 1):
            if t + 1 < len(out_greedy):
                chosen = int(torch.argmax(proc(t + 1, tr["logits"][t:t + 1]), -1)[0])
                assert chosen == out_greedy[t], (case, t, chosen, out_greedy[t])
    tensors = {"ids.src": src.numpy().astype(np.float32), "ids.tgt": tgt.numpy().astype(np.float32)}
    for k, v in tr.items():
        tensors[k] = v.detach().contiguous().numpy().astype(np.float32)
    meta = {"model": folder_name, "interventions": json.dumps(iv), "family": "marian", "case": case,
            "source_text": text, "src_pieces": json.dumps(pieces, ensure_ascii=False),
            "greedy": json.dumps(out_greedy), "beam": json.dumps(out_beam), "beam_width": str(width),
            "length_penalty": str(lp), "max_length": str(gen["max_length"]),
            "beam_variants": json.dumps(out_variants)}
    path = os.path.join(OUT_DIR, case + ".trace.safetensors")
    write_safetensors(path, tensors, meta)
    back, _ = read_safetensors(path)
    assert all(np.array_equal(back[k], v) for k, v in tensors.items())
    size = os.path.getsize(path)
    print(f"{case:28s} S={len(src):2d} T={len(tgt)} {len(tr)} tensors {size:7d} B")
    if decodable:
        print(f"    greedy {out_greedy}\n      = {marian_decode(sp_tgt, id_to_piece, out_greedy)!r}")
        print(f"    beam {width}/{lp} {out_beam}\n      = {marian_decode(sp_tgt, id_to_piece, out_beam)!r}")
        for v in out_variants:
            print(f"    beam {v['beam_width']}/{v['length_penalty']} {v['beam']}")
    return tgt_prefix, out_greedy, out_beam


# ---------------------------------------------------------------------------------------------------------
# Tokenization fixture
HOSTILE = [
    "",
    "   ",
    "\U0001F600",
    "Ein Hund \U0001F415 rennt.",
    "漢字",
    "a\x07b",
    "Ein\tHund\u00a0rennt\r",
    "  Ein   Mann  ",
    "\ufb01 \uff26\uff55\uff4c\uff4c",          # ligature fi, full-width "Full": NFKC folds both
    "Cafe\u0301 Stra\u00dfe",                  # combining accent, sharp s
    "Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichen",
    "x" * 120,
    "\u2581Ein \u2581 Mann",                   # the spm meta symbol itself in the text
    "1234567 ... !!! ???",
]


def tokenization_file(lang, sp, vocab, lines, source_name, spm_name):
    entries = []
    for line in lines:
        pieces, ids = marian_encode(sp, vocab, line)
        entries.append([pieces, ids, sp.decode_pieces(pieces)] if lang == "en" else [pieces, ids])
    hostile = []
    for text in HOSTILE:
        pieces, ids = marian_encode(sp, vocab, text)
        hostile.append({"text": text, "pieces": pieces, "ids": ids, "decoded": sp.decode_pieces(pieces)})
    raw = "\n".join(lines).encode("utf-8")
    head = {
        "about": "MarianTokenizer encoding of every line of " + source_name + " (the text is read from the data "
                 "set at test time, not stored here): pieces = spm.encode(line, out_type=str) with " + spm_name +
                 "; ids through tiny-de-en/vocab.json, a piece missing from it -> <unk> (1); the </s> (0) that "
                 "MarianTokenizer appends is NOT included; lines split on \\n only"
                 + ("; decoded = spm.decode_pieces(pieces)" if lang == "en" else "")
                 + ". hostile: lines of our own, with their text and decode_pieces.",
        "line_layout": ["pieces", "ids", "decoded"] if lang == "en" else ["pieces", "ids"],
        "source": source_name, "spm": spm_name, "vocab": "tiny-de-en/vocab.json", "eos_appended": False,
        "line_count": len(lines), "sha256_of_lines_joined_by_newline": hashlib.sha256(raw).hexdigest(),
    }
    parts = [json.dumps(head, ensure_ascii=False, indent=1)[:-2] + ",\n"]
    parts.append(' "lines": [\n' + ",\n".join(json.dumps(e, ensure_ascii=False, separators=(",", ":"))
                                             for e in entries) + "\n ],\n")
    parts.append(' "hostile": [\n' + ",\n".join(json.dumps(e, ensure_ascii=False, separators=(",", ":"))
                                               for e in hostile) + "\n ]\n}\n")
    path = os.path.join(OUT_DIR, f"tokenization_test2016.{lang}.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(parts))
    with open(path, encoding="utf-8") as f:
        check = json.load(f)
    assert len(check["lines"]) == len(lines) and check["lines"][0] == entries[0]
    return path


# ---------------------------------------------------------------------------------------------------------
def clean():
    """Delete only what this script writes."""
    if not os.path.isdir(OUT_DIR):
        return
    for f in os.listdir(OUT_DIR):
        p = os.path.join(OUT_DIR, f)
        if f.endswith(".trace.safetensors") or (f.startswith("tokenization_test2016") and f.endswith(".json")):
            os.remove(p)
    for folder in ("tiny-de-en", "tiny-separate"):
        d = os.path.join(OUT_DIR, folder)
        if not os.path.isdir(d):
            continue
        for f in MODEL_FILES:
            if os.path.exists(os.path.join(d, f)):
                os.remove(os.path.join(d, f))
        if not os.listdir(d):
            os.rmdir(d)


TINY_DE_EN = dict(name_or_path="stepformer-tests/tiny-random-opus-mt-de-en", d_model=16, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_layers=2, decoder_layers=2, encoder_ffn_dim=32,
                  decoder_ffn_dim=32, max_position_embeddings=64, scale_embedding=True,
                  share_encoder_decoder_embeddings=True, max_length=24, num_beams=4, bias_scale=0.5)
TINY_SEPARATE = dict(name_or_path="stepformer-tests/tiny-random-opus-mt-de-en-separate", d_model=24,
                     encoder_attention_heads=3, decoder_attention_heads=3, encoder_layers=1, decoder_layers=2,
                     encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=64, scale_embedding=True,
                     share_encoder_decoder_embeddings=False, max_length=16, num_beams=4, bias_scale=0.5)
SEED_DE_EN, SEED_SEPARATE = 11, 5
TRAIN_STEPS, TRAIN_PAIRS_PER_STEP, TRAIN_LR = 300, 16, 0.01


def main():
    clean()
    os.makedirs(OUT_DIR, exist_ok=True)
    test_de = read_lines("test_2016_flickr.de.gz")
    test_en = read_lines("test_2016_flickr.en.gz")
    train_de, train_en = read_lines("train.de.gz", SPM_TRAIN_LINES), read_lines("train.en.gz", SPM_TRAIN_LINES)
    # tiny-separate: the next slice
    train_de2 = read_lines("train.de.gz", SPM_TRAIN_LINES, SPM_TRAIN_LINES)
    train_en2 = read_lines("train.en.gz", SPM_TRAIN_LINES, SPM_TRAIN_LINES)
    with tempfile.TemporaryDirectory(prefix="marian-spm-") as tmp:
        spm_de = train_spm(tmp, "de", train_de, 200, "nmt_nfkc")
        spm_en = train_spm(tmp, "en", train_en, 200, "identity")  # see the docstring: size
        sep_de = train_spm(tmp, "sep_de", train_de2, 180, "identity")  # the identity normalizer, 180 pieces
        sep_en = train_spm(tmp, "sep_en", train_en2, 180, "identity")
    sp_de, sp_en, sp_sde, sp_sen = (load_spm(d) for d in (spm_de, spm_en, sep_de, sep_en))

    # ---- tiny-de-en: one vocabulary for both sides
    vocab = marian_vocab(spm_pieces(sp_de), spm_pieces(sp_en))
    c = dict(TINY_DE_EN, vocab_size=len(vocab), decoder_vocab_size=len(vocab), pad_token_id=vocab["<pad>"])
    model = build_model(c, SEED_DE_EN, True, training_pairs(sp_de, vocab, sp_en, vocab, train_de, train_en))
    folder = os.path.join(OUT_DIR, "tiny-de-en")
    tok_cfg = {"eos_token": "</s>", "model_max_length": c["max_position_embeddings"], "pad_token": "<pad>",
               "separate_vocabs": False, "source_lang": "de", "sp_model_kwargs": {}, "target_lang": "en",
               "tokenizer_class": "MarianTokenizer", "unk_token": "<unk>"}
    write_model_folder(folder, model, c, {"source.spm": spm_de, "target.spm": spm_en}, {"vocab.json": vocab},
                       tok_cfg)
    gen = generation_config(c)
    id_to_piece = {i: p for p, i in vocab.items()}
    s_plain = test_de[14]     # "Drei Leute sitzen in einer Höhle.", 10 pieces: plain and intervention cases
    s_unk = "Ein Kind \U0001F94B im 漢 Wasser."   # after test_de[32], an emoji and a CJK character: two <unk>
    s_long = max((l for l in test_de if len(sp_de.encode(l)) <= 24), key=lambda l: len(sp_de.encode(l)))
    unk_pieces, unk_ids = marian_encode(sp_de, vocab, s_unk)
    assert unk_ids.count(UNK_ID) == 2, unk_pieces
    name = "tiny-de-en"
    variants = [(2, 1.0), (4, 0.6), (5, 1.3)]
    prefix, g_plain, _ = write_case("marian_plain", name, model, gen, sp_de, vocab, s_plain, None, {}, (4, 1.0),
                                    variants, id_to_piece, sp_en)
    assert len(set(g_plain)) > 4 and len(g_plain) >= 5, g_plain
    write_case("marian_heads_off", name, model, gen, sp_de, vocab, s_plain, prefix,
               {"heads_off": ["enc.0.1", "dec.1.2", "cross.0.3"]}, (4, 1.0), variants, id_to_piece, sp_en)
    write_case("marian_no_causal", name, model, gen, sp_de, vocab, s_plain, prefix, {"causal_mask": False},
               (4, 1.0), variants, id_to_piece, sp_en)
    write_case("marian_no_positions", name, model, gen, sp_de, vocab, s_plain, prefix,
               {"positional_encoding": False}, (4, 1.0), variants, id_to_piece, sp_en)
    S = len(sp_de.encode(s_plain)) + 1
    T = 1 + len(prefix)
    enc_paint = [[1 if (j == i + 1 or (i == 2 and j % 2 == 0)) else 0 for j in range(S)] for i in range(S)]
    dec_paint = [[1 if (j > i or (j == 0 and i > 0)) else 0 for j in range(T)] for i in range(T)]
    cross_paint = [[1 if (i + j) % 3 == 0 else 0 for j in range(S)] for i in range(T)]
    write_case("marian_painted", name, model, gen, sp_de, vocab, s_plain, prefix,
               {"custom_masks": [{"where": "enc.1.2", "blocked": enc_paint},
                                 {"where": "dec.1.3", "blocked": dec_paint},
                                 {"where": "cross.0.1", "blocked": cross_paint}]},
               (4, 1.0), variants, id_to_piece, sp_en)
    write_case("marian_unk", name, model, gen, sp_de, vocab, s_unk, None, {}, (2, 1.0), variants, id_to_piece,
               sp_en)
    write_case("marian_long", name, model, gen, sp_de, vocab, s_long, None, {}, (4, 0.6), variants, id_to_piece,
               sp_en)

    # ---- tiny-separate: own vocabularies for source and target, untied encoder / decoder embeddings
    src_vocab = marian_vocab(spm_pieces(sp_sde))
    tgt_vocab = marian_vocab(spm_pieces(sp_sen))
    assert len(src_vocab) == len(tgt_vocab) and src_vocab["<pad>"] == tgt_vocab["<pad>"]
    c2 = dict(TINY_SEPARATE, vocab_size=len(src_vocab), decoder_vocab_size=len(tgt_vocab),
              pad_token_id=src_vocab["<pad>"])
    # A gentler rate than tiny-de-en's: at 0.01 its attention scores reached 200, where float32's rounding alone
    # (an ulp is 1.5e-5 there) is past the tests' 1e-5.
    model2 = build_model(c2, SEED_SEPARATE, False,
                         training_pairs(sp_sde, src_vocab, sp_sen, tgt_vocab, train_de2, train_en2), lr=0.003)
    folder2 = os.path.join(OUT_DIR, "tiny-separate")
    tok_cfg2 = dict(tok_cfg, separate_vocabs=True, model_max_length=c2["max_position_embeddings"],
                    target_vocab_file=None)
    tok_cfg2.pop("target_vocab_file")
    write_model_folder(folder2, model2, c2, {"source.spm": sep_de, "target.spm": sep_en},
                       {"vocab.json": src_vocab, "target_vocab.json": tgt_vocab}, tok_cfg2)
    gen2 = generation_config(c2)
    tgt_id_to_piece = {i: p for p, i in tgt_vocab.items()}
    name2 = "tiny-separate"
    s_sep = test_de[32]   # "Ein Kind planscht im Wasser."
    prefix2, g_sep, _ = write_case("marian_separate_plain", name2, model2, gen2, sp_sde, src_vocab, s_sep, None, {},
                                   (4, 1.0), variants, tgt_id_to_piece, sp_sen)
    assert len(set(g_sep)) > 2 and len(g_sep) >= 5, g_sep
    write_case("marian_separate_heads_off", name2, model2, gen2, sp_sde, src_vocab, s_sep, prefix2,
               {"heads_off": ["enc.0.2", "dec.0.1", "cross.1.0"]}, (4, 1.0), variants, tgt_id_to_piece, sp_sen)

    # ---- tokenization of the test set with tiny-de-en's tokenizer
    tokenization_file("de", sp_de, vocab, test_de, "multi30k/raw/test_2016_flickr.de.gz", "tiny-de-en/source.spm")
    tokenization_file("en", sp_en, vocab, test_en, "multi30k/raw/test_2016_flickr.en.gz", "tiny-de-en/target.spm")

    # ---- summary
    print()
    total = 0
    for root, _, files in sorted(os.walk(OUT_DIR)):
        for f in sorted(files):
            p = os.path.join(root, f)
            size = os.path.getsize(p)
            total += size
            print(f"{os.path.relpath(p, OUT_DIR):44s} {size:8d}")
    print(f"total {total} bytes in {OUT_DIR}")
    assert total < 2_300_000, "the Marian fixtures grew past about 2 MB"


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
