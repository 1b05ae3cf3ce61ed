"""The PyTorch model families Stepformer loads by name, written as their tutorials write them.

Development time only (Debian's python3-torch, /usr/bin/python3). Each builder takes a native config dict (the
keys of core/model/config.h's config_to_json, documented in docs/model-files.md; absent keys take the C++
defaults) and returns a torch.nn.Module whose state_dict() has exactly the names and shapes of the family:

  build_pytorch_tutorial(cfg)  -> Seq2SeqTransformer of PyTorch's "Language Translation with nn.Transformer"
                                  tutorial: nn.Transformer (batch_first, post-norm or norm_first, final
                                  encoder/decoder norms), TokenEmbedding scaled by sqrt(d_model), the
                                  tutorial's sinusoidal PositionalEncoding buffer, a generator Linear.
  build_seq2seq_tutorial(cfg)  -> Seq2Seq of the popular pytorch-seq2seq "Attention is All You Need" notebook:
                                  fc_q/fc_k/fc_v/fc_o attention, learned positions (pos_embedding), embeddings
                                  scaled by sqrt(hid_dim), post-norm, no final norms, decoder.fc_out.
  build_from_scratch(cfg)      -> the study note's "Transformer from scratch" (NoteTransformer: Encoder, Decoder,
                                  fc_out; selfAttention, EncoderBlock, DecoderBlock), quirks included.

Dropout defaults to 0 so forward passes are deterministic. Shapes: B batch, S source length, T target length,
C d_model, H heads, D = C / H, F d_ff, V vocabulary.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# The C++ Config defaults (core/model/config.h).
DEFAULT_CONFIG = {
    "d_model": 256, "n_heads": 8, "n_encoder_layers": 3, "n_decoder_layers": 3, "d_ff": 512,
    "max_positions": 256, "positional_encoding": "sinusoidal", "sinusoid_layout": "interleaved",
    "embedding_scale": "sqrt_d_model",
    "norm_placement": "post", "encoder_final_norm": False, "decoder_final_norm": False, "activation": "relu",
    "attention": "split_heads", "layer_norm_eps": 1e-5, "bias": True, "tie_output_embedding": False, "share_embeddings": False,
    "pad_id": 1, "bos_id": 2, "eos_id": 3, "unk_id": 0,
}


def full_config(cfg):
    """The config with the C++ defaults filled in (src_vocab_size and tgt_vocab_size are required)."""
    out = dict(DEFAULT_CONFIG)
    out.update(cfg)
    for key in ("src_vocab_size", "tgt_vocab_size"):
        if key not in out:
            raise ValueError(f"config needs '{key}'")
    return out


def _embedding_scale(cfg):
    return math.sqrt(cfg["d_model"]) if cfg["embedding_scale"] == "sqrt_d_model" else 1.0


# ---------------------------------------------------------------------------------------------------------
# pytorch-tutorial
class PositionalEncoding(nn.Module):
    """The tutorial's sinusoidal encoding: a (maxlen, 1, C) buffer 'pos_embedding' (float32 arithmetic)."""

    def __init__(self, emb_size, dropout=0.0, maxlen=5000):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(-2)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding)

    def forward(self, token_embedding):  # (B, L, C), batch first
        positions = self.pos_embedding[: token_embedding.size(1), 0, :]  # (L, C)
        return self.dropout(token_embedding + positions.unsqueeze(0))


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, emb_size, scale):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size
        self.scale = scale

    def forward(self, tokens):  # (B, L) -> (B, L, C)
        return self.embedding(tokens.long()) * self.scale


class Seq2SeqTransformer(nn.Module):
    def __init__(self, cfg, dropout=0.0, pe_maxlen=5000):
        super().__init__()
        C = cfg["d_model"]
        self.transformer = nn.Transformer(
            d_model=C, nhead=cfg["n_heads"], num_encoder_layers=cfg["n_encoder_layers"],
            num_decoder_layers=cfg["n_decoder_layers"], dim_feedforward=cfg["d_ff"], dropout=dropout,
            activation=cfg["activation"], layer_norm_eps=cfg["layer_norm_eps"], batch_first=True,
            norm_first=cfg["norm_placement"] == "pre")
        self.generator = nn.Linear(C, cfg["tgt_vocab_size"])
        self.src_tok_emb = TokenEmbedding(cfg["src_vocab_size"], C, _embedding_scale(cfg))
        self.tgt_tok_emb = TokenEmbedding(cfg["tgt_vocab_size"], C, _embedding_scale(cfg))
        self.positional_encoding = PositionalEncoding(C, dropout=dropout, maxlen=pe_maxlen)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))  # (B, S, C)
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))  # (B, T, C)
        outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask,
                                memory_key_padding_mask)
        return self.generator(outs)  # (B, T, Vt)

    def encode(self, src, src_mask):
        return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask)

    def decode(self, tgt, memory, tgt_mask):
        return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)


def build_pytorch_tutorial(cfg, dropout=0.0, pe_maxlen=5000):
    cfg = full_config(cfg)
    if cfg["positional_encoding"] != "sinusoidal" or not cfg["encoder_final_norm"] or not cfg["decoder_final_norm"]:
        raise ValueError("pytorch-tutorial: needs sinusoidal positions and both final norms (nn.Transformer)")
    if not cfg["bias"] or cfg["share_embeddings"] or cfg["tie_output_embedding"]:
        raise ValueError("pytorch-tutorial: needs bias true, no shared or tied embeddings")
    return Seq2SeqTransformer(cfg, dropout=dropout, pe_maxlen=pe_maxlen)


# ---------------------------------------------------------------------------------------------------------
# seq2seq-tutorial
class MultiHeadAttentionLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, dropout):
        super().__init__()
        assert hid_dim % n_heads == 0
        self.hid_dim = hid_dim
        self.n_heads = n_heads
        self.head_dim = hid_dim // n_heads
        self.fc_q = nn.Linear(hid_dim, hid_dim)
        self.fc_k = nn.Linear(hid_dim, hid_dim)
        self.fc_v = nn.Linear(hid_dim, hid_dim)
        self.fc_o = nn.Linear(hid_dim, hid_dim)
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.sqrt(torch.FloatTensor([self.head_dim]))  # a plain attribute: not in the state_dict

    def forward(self, query, key, value, mask=None):
        batch_size = query.shape[0]
        Q = self.fc_q(query).view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)  # (B, H, Lq, D)
        K = self.fc_k(key).view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)    # (B, H, Lk, D)
        V = self.fc_v(value).view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)  # (B, H, Lk, D)
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / self.scale  # (B, H, Lq, Lk)
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        attention = torch.softmax(energy, dim=-1)
        x = torch.matmul(self.dropout(attention), V)  # (B, H, Lq, D)
        x = x.permute(0, 2, 1, 3).contiguous().view(batch_size, -1, self.hid_dim)
        return self.fc_o(x), attention


class PositionwiseFeedforwardLayer(nn.Module):
    def __init__(self, hid_dim, pf_dim, dropout, activation="relu"):
        super().__init__()
        self.fc_1 = nn.Linear(hid_dim, pf_dim)
        self.fc_2 = nn.Linear(pf_dim, hid_dim)
        self.dropout = nn.Dropout(dropout)
        self.activation = torch.relu if activation == "relu" else F.gelu

    def forward(self, x):
        return self.fc_2(self.dropout(self.activation(self.fc_1(x))))


class EncoderLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, pf_dim, dropout, eps, activation):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(hid_dim, eps=eps)
        self.ff_layer_norm = nn.LayerNorm(hid_dim, eps=eps)
        self.self_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout)
        self.positionwise_feedforward = PositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout, activation)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_mask):
        _src, _ = self.self_attention(src, src, src, src_mask)
        src = self.self_attn_layer_norm(src + self.dropout(_src))
        _src = self.positionwise_feedforward(src)
        return self.ff_layer_norm(src + self.dropout(_src))


class Encoder(nn.Module):
    def __init__(self, input_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, max_length, scale, eps, activation):
        super().__init__()
        self.tok_embedding = nn.Embedding(input_dim, hid_dim)
        self.pos_embedding = nn.Embedding(max_length, hid_dim)
        self.layers = nn.ModuleList(
            [EncoderLayer(hid_dim, n_heads, pf_dim, dropout, eps, activation) for _ in range(n_layers)])
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.FloatTensor([scale])

    def forward(self, src, src_mask):  # src (B, S)
        batch_size, src_len = src.shape
        pos = torch.arange(0, src_len).unsqueeze(0).repeat(batch_size, 1)
        src = self.dropout((self.tok_embedding(src) * self.scale) + self.pos_embedding(pos))  # (B, S, C)
        for layer in self.layers:
            src = layer(src, src_mask)
        return src


class DecoderLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, pf_dim, dropout, eps, activation):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(hid_dim, eps=eps)
        self.enc_attn_layer_norm = nn.LayerNorm(hid_dim, eps=eps)
        self.ff_layer_norm = nn.LayerNorm(hid_dim, eps=eps)
        self.self_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout)
        self.encoder_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout)
        self.positionwise_feedforward = PositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout, activation)
        self.dropout = nn.Dropout(dropout)

    def forward(self, trg, enc_src, trg_mask, src_mask):
        _trg, _ = self.self_attention(trg, trg, trg, trg_mask)
        trg = self.self_attn_layer_norm(trg + self.dropout(_trg))
        _trg, attention = self.encoder_attention(trg, enc_src, enc_src, src_mask)
        trg = self.enc_attn_layer_norm(trg + self.dropout(_trg))
        _trg = self.positionwise_feedforward(trg)
        return self.ff_layer_norm(trg + self.dropout(_trg)), attention


class Decoder(nn.Module):
    def __init__(self, output_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, max_length, scale, eps, activation):
        super().__init__()
        self.tok_embedding = nn.Embedding(output_dim, hid_dim)
        self.pos_embedding = nn.Embedding(max_length, hid_dim)
        self.layers = nn.ModuleList(
            [DecoderLayer(hid_dim, n_heads, pf_dim, dropout, eps, activation) for _ in range(n_layers)])
        self.fc_out = nn.Linear(hid_dim, output_dim)
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.FloatTensor([scale])

    def forward(self, trg, enc_src, trg_mask, src_mask):  # trg (B, T), enc_src (B, S, C)
        batch_size, trg_len = trg.shape
        pos = torch.arange(0, trg_len).unsqueeze(0).repeat(batch_size, 1)
        trg = self.dropout((self.tok_embedding(trg) * self.scale) + self.pos_embedding(pos))  # (B, T, C)
        attention = None
        for layer in self.layers:
            trg, attention = layer(trg, enc_src, trg_mask, src_mask)
        return self.fc_out(trg), attention  # (B, T, Vt), (B, H, T, S)


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, src_pad_idx, trg_pad_idx):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_pad_idx = src_pad_idx
        self.trg_pad_idx = trg_pad_idx

    def make_src_mask(self, src):  # (B, 1, 1, S)
        return (src != self.src_pad_idx).unsqueeze(1).unsqueeze(2)

    def make_trg_mask(self, trg):  # (B, 1, T, T)
        trg_pad_mask = (trg != self.trg_pad_idx).unsqueeze(1).unsqueeze(2)
        trg_len = trg.shape[1]
        trg_sub_mask = torch.tril(torch.ones((trg_len, trg_len))).bool()
        return trg_pad_mask & trg_sub_mask

    def forward(self, src, trg):
        src_mask = self.make_src_mask(src)
        trg_mask = self.make_trg_mask(trg)
        enc_src = self.encoder(src, src_mask)
        return self.decoder(trg, enc_src, trg_mask, src_mask)


def build_seq2seq_tutorial(cfg, dropout=0.0):
    cfg = full_config(cfg)
    if cfg["positional_encoding"] != "learned" or cfg["encoder_final_norm"] or cfg["decoder_final_norm"]:
        raise ValueError("seq2seq-tutorial: needs learned positions and no final norms")
    if cfg["norm_placement"] != "post":
        raise ValueError("seq2seq-tutorial: the tutorial is post-norm")
    if not cfg["bias"] or cfg["share_embeddings"] or cfg["tie_output_embedding"]:
        raise ValueError("seq2seq-tutorial: needs bias true, no shared or tied embeddings")
    C, H, F_, P = cfg["d_model"], cfg["n_heads"], cfg["d_ff"], cfg["max_positions"]
    scale, eps, act = _embedding_scale(cfg), cfg["layer_norm_eps"], cfg["activation"]
    encoder = Encoder(cfg["src_vocab_size"], C, cfg["n_encoder_layers"], H, F_, dropout, P, scale, eps, act)
    decoder = Decoder(cfg["tgt_vocab_size"], C, cfg["n_decoder_layers"], H, F_, dropout, P, scale, eps, act)
    return Seq2Seq(encoder, decoder, cfg["pad_id"], cfg["pad_id"])


# ---------------------------------------------------------------------------------------------------------
# from-scratch: the Korean study note's "Transformer from scratch" (../shared/seeds/001_65bd59ad5c71ccfe.txt),
# written again from the note, quirks included: heads by reshape(N, h, len, d_k) without a transpose, one
# Linear(d_k, d_k, bias=False) per Q/K/V shared by every head, masked_fill(mask == 0, -1e20) before dividing by
# sqrt(embed_size), make_pad_mask blocking padded keys and queries with the source's pad id, the attribute name
# feed_forawrd, positions computed in the module (not in the state_dict), log_softmax output.
# Our one addition: selfAttention.heads_off (a set of head indices whose output is zeroed before the reshape
# back), empty unless a fixture switches heads off, as Stepformer's intervention does.
class selfAttention(nn.Module):
    def __init__(self, embed_size, heads):
        super().__init__()
        self.embed_size = embed_size
        self.heads = heads
        self.head_dim = embed_size // heads
        self.query = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.key = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.value = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.fc_out = nn.Linear(heads * self.head_dim, embed_size)
        self.heads_off = set()
        self.record = None  # a dict to fill with this call's intermediates, or None

    def forward(self, value, key, query, mask):
        N_batch = query.shape[0]
        value_len, key_len, query_len = value.shape[1], key.shape[1], query.shape[1]
        value = value.reshape(N_batch, self.heads, value_len, self.head_dim)  # (n, h, value_len, d_k)
        key = key.reshape(N_batch, self.heads, key_len, self.head_dim)
        query = query.reshape(N_batch, self.heads, query_len, self.head_dim)
        V = self.value(value)
        K = self.key(key)
        Q = self.query(query)
        score = torch.matmul(Q, K.transpose(-2, -1))  # (n, h, query_len, key_len)
        raw = score
        if mask is not None:
            score = score.masked_fill(mask == 0, float("-1e20"))
        d_k = self.embed_size ** (1 / 2)
        softmax_score = torch.softmax(score / d_k, dim=3)
        heads = torch.matmul(softmax_score, V)  # (n, h, query_len, d_k)
        if self.heads_off:
            heads = heads.clone()
            for h in self.heads_off:
                heads[:, h] = 0
        out = heads.reshape(N_batch, query_len, self.heads * self.head_dim)
        result = self.fc_out(out)
        if self.record is not None:
            blocked = (mask == 0).expand(N_batch, self.heads, query_len, key_len) if mask is not None else \
                torch.zeros(N_batch, self.heads, query_len, key_len, dtype=torch.bool)
            self.record.update(q=Q, k=K, v=V, scores=raw / d_k, mask=blocked.float(), probs=softmax_score,
                               head_out=heads, heads_out=out, attn_out=result)
        return result


class EncoderBlock(nn.Module):
    def __init__(self, embed_size, heads, dropout, forward_expansion):
        super().__init__()
        self.attention = selfAttention(embed_size, heads)
        self.norm1 = nn.LayerNorm(embed_size)
        self.norm2 = nn.LayerNorm(embed_size)
        self.feed_forawrd = nn.Sequential(
            nn.Linear(embed_size, forward_expansion * embed_size),
            nn.ReLU(),
            nn.Linear(forward_expansion * embed_size, embed_size),
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, value, key, query, mask):
        attention = self.attention(value, key, query, mask)
        x = self.dropout(self.norm1(attention + query))
        forward = self.feed_forawrd(x)
        out = self.dropout(self.norm2(forward + x))
        return out


def _note_positions(max_length, embed_size):
    pos_embed = torch.zeros(max_length, embed_size)
    position = torch.arange(0, max_length).float().unsqueeze(1)
    div_term = torch.exp(torch.arange(0, embed_size, 2) * -(math.log(10000.0) / embed_size))
    pos_embed[:, 0::2] = torch.sin(position * div_term)
    pos_embed[:, 1::2] = torch.cos(position * div_term)
    return pos_embed.unsqueeze(0)  # (1, max_length, embed_size): a plain attribute, not in the state_dict


class NoteEncoder(nn.Module):  # the note's class Encoder
    def __init__(self, src_vocab_size, embed_size, num_layers, heads, forward_expansion, dropout, max_length):
        super().__init__()
        self.embed_size = embed_size
        self.word_embedding = nn.Embedding(src_vocab_size, embed_size)
        self.pos_embed = _note_positions(max_length, embed_size)
        self.layers = nn.ModuleList(
            [EncoderBlock(embed_size, heads, dropout=dropout, forward_expansion=forward_expansion)
             for _ in range(num_layers)])
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask):
        _, seq_len = x.size()
        pos_embed = self.pos_embed[:, :seq_len, :]
        out = self.dropout(self.word_embedding(x) + pos_embed)
        for layer in self.layers:
            out = layer(out, out, out, mask)
        return out


class DecoderBlock(nn.Module):
    def __init__(self, embed_size, heads, dropout, forward_expansion):
        super().__init__()
        self.norm = nn.LayerNorm(embed_size)
        self.attention = selfAttention(embed_size, heads=heads)
        self.encoder_block = EncoderBlock(embed_size, heads, dropout, forward_expansion)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, value, key, src_trg_mask, target_mask):
        attention = self.attention(x, x, x, target_mask)
        query = self.dropout(self.norm(attention + x))
        out = self.encoder_block(value, key, query, src_trg_mask)
        return out


class NoteDecoder(nn.Module):  # the note's class Decoder
    def __init__(self, trg_vocab_size, embed_size, num_layers, heads, forward_expansion, dropout, max_length):
        super().__init__()
        self.word_embedding = nn.Embedding(trg_vocab_size, embed_size)
        self.pos_embed = _note_positions(max_length, embed_size)
        self.layers = nn.ModuleList(
            [DecoderBlock(embed_size, heads, dropout, forward_expansion) for _ in range(num_layers)])
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, enc_src, src_trg_mask, trg_mask):
        _, seq_len = x.size()
        pos_embed = self.pos_embed[:, :seq_len, :]
        out = self.dropout(self.word_embedding(x) + pos_embed)
        for layer in self.layers:
            out = layer(out, enc_src, enc_src, src_trg_mask, trg_mask)
        return out


class NoteTransformer(nn.Module):  # the note's class Transformer
    def __init__(self, src_vocab_size, trg_vocab_size, src_pad_idx, trg_pad_idx, embed_size, num_layers,
                 forward_expansion, heads, dropout, max_length, num_decoder_layers=None):
        super().__init__()
        self.Encoder = NoteEncoder(src_vocab_size, embed_size, num_layers, heads, forward_expansion, dropout,
                                   max_length)
        self.Decoder = NoteDecoder(trg_vocab_size, embed_size, num_decoder_layers or num_layers, heads,
                                   forward_expansion, dropout, max_length)
        self.src_pad_idx = src_pad_idx
        self.trg_pad_idx = trg_pad_idx
        self.fc_out = nn.Linear(embed_size, trg_vocab_size)

    def encode(self, src):
        src_mask = self.make_pad_mask(src, src)
        return self.Encoder(src, src_mask)

    def decode(self, src, trg, enc_src):
        src_trg_mask = self.make_pad_mask(trg, src)
        trg_mask = self.make_trg_mask(trg)
        out = self.Decoder(trg, enc_src, src_trg_mask, trg_mask)
        out = self.fc_out(out)
        return F.log_softmax(out, dim=-1)

    def make_pad_mask(self, query, key):
        len_query, len_key = query.size(1), key.size(1)
        key = key.ne(self.src_pad_idx).unsqueeze(1).unsqueeze(2)
        key = key.repeat(1, 1, len_query, 1)
        query = query.ne(self.src_pad_idx).unsqueeze(1).unsqueeze(3)
        query = query.repeat(1, 1, 1, len_key)
        return key & query

    def make_trg_mask(self, trg):
        N, trg_len = trg.shape
        return torch.tril(torch.ones((trg_len, trg_len))).expand(N, 1, trg_len, trg_len)

    def forward(self, src, trg):
        src_mask = self.make_pad_mask(src, src)
        trg_mask = self.make_trg_mask(trg)
        src_trg_mask = self.make_pad_mask(trg, src)
        enc_src = self.Encoder(src, src_mask)
        out = self.Decoder(trg, enc_src, src_trg_mask, trg_mask)
        out = self.fc_out(out)
        return F.log_softmax(out, dim=-1)


def from_scratch_config(embed_size, heads, num_layers, forward_expansion, src_vocab_size, trg_vocab_size,
                        max_length=140, pad_id=1, bos_id=2, eos_id=3, unk_id=0, num_decoder_layers=None):
    """The native config (core/model/config.h keys) of the note's Transformer(...) arguments."""
    return dict(full_config({
        "d_model": embed_size, "n_heads": heads, "n_encoder_layers": num_layers,
        "n_decoder_layers": num_decoder_layers or num_layers, "d_ff": forward_expansion * embed_size,
        "src_vocab_size": src_vocab_size, "tgt_vocab_size": trg_vocab_size, "max_positions": max_length,
        "positional_encoding": "sinusoidal", "embedding_scale": "one", "norm_placement": "post",
        "encoder_final_norm": False, "decoder_final_norm": False, "activation": "relu", "attention": "reshape_heads",
        "layer_norm_eps": 1e-5, "bias": True, "tie_output_embedding": False, "share_embeddings": False,
        "pad_id": pad_id, "bos_id": bos_id, "eos_id": eos_id, "unk_id": unk_id}))


def build_from_scratch(cfg, dropout=0.0):
    cfg = full_config(cfg)
    if cfg["d_ff"] % cfg["d_model"]:
        raise ValueError("from-scratch: d_ff must be forward_expansion * d_model")
    return NoteTransformer(cfg["src_vocab_size"], cfg["tgt_vocab_size"], cfg["pad_id"], cfg["pad_id"],
                           cfg["d_model"], cfg["n_encoder_layers"], cfg["d_ff"] // cfg["d_model"], cfg["n_heads"],
                           dropout, cfg["max_positions"], num_decoder_layers=cfg["n_decoder_layers"])


BUILDERS = {"pytorch-tutorial": build_pytorch_tutorial, "seq2seq-tutorial": build_seq2seq_tutorial,
            "from-scratch": build_from_scratch}


def build(family, cfg, **kwargs):
    """The torch module of `family` ("pytorch-tutorial" or "seq2seq-tutorial") for a native config dict."""
    return BUILDERS[family](cfg, **kwargs)
