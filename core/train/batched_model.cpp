#include "train/batched_model.h"

#include <cmath>

#include "nn/backward.h"
#include "nn/embedding.h"
#include "nn/feed_forward.h"
#include "nn/linear.h"
#include "util/error.h"

namespace sf {

namespace {

// [SECTION] dropout masks
// Counter-based: element i of dropout site k at step s is kept iff hash(seed, s, k, i) >= p. The same masks
// come out whatever the number of threads, and no generator state needs saving in a checkpoint.
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class DropoutMasks {
 public:
  explicit DropoutMasks(const DropoutSettings& s) : s_(s) {}
  bool on() const { return s_.p > 0.0f; }
  // keep (rows, cols): 0 with probability p, else 1 / (1 - p) (inverted dropout: no rescaling at test time).
  void make(Mat& keep, Eigen::Index rows, Eigen::Index cols) {
    const uint64_t key = splitmix64(s_.seed ^ splitmix64(s_.step * 0x100000001b3ULL + (++site_)));
    keep.resize(rows, cols);
    const float scale = 1.0f / (1.0f - s_.p), p = s_.p;
    float* out = keep.data();
    const Eigen::Index n = keep.size();
#pragma omp parallel for schedule(static) if (n > 32768)
    for (Eigen::Index i = 0; i < n; ++i) {
      const float u = static_cast<float>(splitmix64(key + static_cast<uint64_t>(i)) >> 40) * (1.0f / 16777216.0f);
      out[i] = u < p ? 0.0f : scale;
    }
  }

 private:
  const DropoutSettings& s_;
  uint64_t site_ = 0;
};

// [SECTION] embeddings
// x[b*L + i] = E[ids[b*L + i]] * scale + pos[i]                                     (B*L, C)
void embed(const std::vector<int>& ids, int length, const Mat& table, const Mat& positions, float scale, Mat& x) {
  embedding_forward(ids, table, scale, x);
  for (Eigen::Index r = 0; r < x.rows(); ++r) x.row(r) += positions.row(r % length);
}

const Mat& position_table(const Config& c, const Mat& learned) {
  return c.positional_encoding == PositionalEncoding::Learned ? learned
                                                              : cached_sinusoidal_encoding(c.max_positions, c.d_model);
}

float embedding_scale(const Config& c) {
  return c.embedding_scale == EmbeddingScale::SqrtDModel ? std::sqrt(static_cast<float>(c.d_model)) : 1.0f;
}

// [SECTION] attention
// For sentence b and head h:  P = softmax(Q_bh K_bh^T / sqrt(D) + M),  O_bh = drop(P) V_bh.
// M blocks keys that are padding and, when causal, keys after the query.
void attention_forward(const ConstMatRef& x_q, const ConstMatRef& x_kv, int batch, int tq, int tk,
                       const AttentionWeights& w, int heads, const std::vector<int>& key_ids, int pad_id, bool causal,
                       DropoutMasks& dropout, BatchAttentionTrace& t) {
  linear_forward(x_q, w.q, t.q);   // (B*Tq, C)
  linear_forward(x_kv, w.k, t.k);  // (B*Tk, C)
  linear_forward(x_kv, w.v, t.v);  // (B*Tk, C)
  const int c = static_cast<int>(t.q.cols()), d = c / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  t.probs.resize(static_cast<Eigen::Index>(batch) * heads * tq, tk);
  t.heads_out.resize(static_cast<Eigen::Index>(batch) * tq, c);
  if (dropout.on()) dropout.make(t.probs_keep, t.probs.rows(), tk);
  else t.probs_keep.resize(0, 0);
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      const auto q = t.q.block(static_cast<Eigen::Index>(b) * tq, h * d, tq, d);
      const auto k = t.k.block(static_cast<Eigen::Index>(b) * tk, h * d, tk, d);
      const auto v = t.v.block(static_cast<Eigen::Index>(b) * tk, h * d, tk, d);
      const Eigen::Index first = (static_cast<Eigen::Index>(b) * heads + h) * tq;
      auto p = t.probs.block(first, 0, tq, tk);
      p.noalias() = scale * (q * k.transpose());  // (Tq, Tk)
      const int* keys = &key_ids[static_cast<size_t>(b) * tk];
      for (int i = 0; i < tq; ++i) {
        float max = -INFINITY;
        for (int j = 0; j < tk; ++j)
          if (keys[j] != pad_id && !(causal && j > i)) max = std::max(max, p(i, j));
        float sum = 0.0f;
        for (int j = 0; j < tk; ++j) {
          const bool allowed = keys[j] != pad_id && !(causal && j > i);
          const float e = allowed ? std::exp(p(i, j) - max) : 0.0f;
          p(i, j) = e;
          sum += e;
        }
        if (sum > 0.0f) p.row(i) /= sum;  // a fully blocked row stays all zeros (attends to nothing)
      }
      auto o = t.heads_out.block(static_cast<Eigen::Index>(b) * tq, h * d, tq, d);
      if (t.probs_keep.size() > 0) {
        const Mat dropped = p.cwiseProduct(t.probs_keep.block(first, 0, tq, tk));
        o.noalias() = dropped * v;
      } else {
        o.noalias() = p * v;  // (Tq, D)
      }
    }
  }
  linear_forward(t.heads_out, w.out, t.out);  // (B*Tq, C)
}

// The adjoint of attention_forward. dx_q and dx_kv are written (for self-attention the caller adds them).
//   dV = drop(P)^T dO     dP = (dO V^T) * keep     dS = P * (dP - rowsum(dP * P)) / sqrt(D)
//   dQ = dS K             dK = dS^T Q
void attention_backward(const ConstMatRef& x_q, const ConstMatRef& x_kv, int batch, int tq, int tk,
                        const AttentionWeights& w, int heads, const BatchAttentionTrace& t, const ConstMatRef& dout,
                        AttentionWeights& g, Mat& dx_q, Mat& dx_kv) {
  Mat dheads;  // (B*Tq, C)
  linear_backward(t.heads_out, w.out, dout, g.out, &dheads);
  const int c = static_cast<int>(t.q.cols()), d = c / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Mat dq(t.q.rows(), c), dk(t.k.rows(), c), dv(t.v.rows(), c);
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      const Eigen::Index first = (static_cast<Eigen::Index>(b) * heads + h) * tq;
      const auto p = t.probs.block(first, 0, tq, tk);
      const auto q = t.q.block(static_cast<Eigen::Index>(b) * tq, h * d, tq, d);
      const auto k = t.k.block(static_cast<Eigen::Index>(b) * tk, h * d, tk, d);
      const auto v = t.v.block(static_cast<Eigen::Index>(b) * tk, h * d, tk, d);
      const auto d_o = dheads.block(static_cast<Eigen::Index>(b) * tq, h * d, tq, d);
      Mat dp(tq, tk);
      dp.noalias() = d_o * v.transpose();
      auto dv_block = dv.block(static_cast<Eigen::Index>(b) * tk, h * d, tk, d);
      if (t.probs_keep.size() > 0) {
        const auto keep = t.probs_keep.block(first, 0, tq, tk);
        const Mat dropped = p.cwiseProduct(keep);
        dv_block.noalias() = dropped.transpose() * d_o;
        dp.array() *= keep.array();
      } else {
        dv_block.noalias() = p.transpose() * d_o;
      }
      const Vec row_dot = (dp.array() * p.array()).rowwise().sum();
      Mat ds = p.array() * (dp.array().colwise() - row_dot.array());
      ds *= scale;
      dq.block(static_cast<Eigen::Index>(b) * tq, h * d, tq, d).noalias() = ds * k;
      dk.block(static_cast<Eigen::Index>(b) * tk, h * d, tk, d).noalias() = ds.transpose() * q;
    }
  }
  linear_backward(x_q, w.q, dq, g.q, &dx_q);
  Mat dx_v;
  linear_backward(x_kv, w.k, dk, g.k, &dx_kv);
  linear_backward(x_kv, w.v, dv, g.v, &dx_v);
  dx_kv += dx_v;
}

// [SECTION] add & norm around a sublayer
//   post-norm: y = LN(x + drop(f(x)))        pre-norm: y = x + drop(f(LN(x)))
const Mat& residual_begin(const Config& c, ResidualTrace& r, const Mat& x, const LayerNormWeights& n) {
  r.x = x;
  if (c.norm_placement == NormPlacement::Pre) {
    layer_norm_forward(r.x, n, c.layer_norm_eps, r.norm);
    return r.norm.out;
  }
  return r.x;
}

const Mat& sublayer_input(const Config& c, const ResidualTrace& r) {
  return c.norm_placement == NormPlacement::Pre ? r.norm.out : r.x;
}

void residual_end(const Config& c, ResidualTrace& r, const Mat& f, const LayerNormWeights& n, DropoutMasks& dropout,
                  Mat& y) {
  if (dropout.on()) dropout.make(r.keep, f.rows(), f.cols());
  else r.keep.resize(0, 0);
  if (c.norm_placement == NormPlacement::Post) {
    r.sum = r.x;
    if (r.keep.size() > 0) r.sum.array() += f.array() * r.keep.array();
    else r.sum += f;
    layer_norm_forward(r.sum, n, c.layer_norm_eps, r.norm);
    y = r.norm.out;
  } else {
    y = r.x;
    if (r.keep.size() > 0) y.array() += f.array() * r.keep.array();
    else y += f;
  }
}

// From dL/dy: dL/df (df) and the residual path's part of dL/dx (dx).
void residual_end_backward(const Config& c, const ResidualTrace& r, const LayerNormWeights& n, LayerNormWeights& gn,
                           const Mat& dy, Mat& df, Mat& dx) {
  if (c.norm_placement == NormPlacement::Post) layer_norm_backward(r.sum, r.norm, n, dy, gn, dx);
  else dx = dy;
  df = dx;
  if (r.keep.size() > 0) df.array() *= r.keep.array();
}

// Adds the sublayer path's part of dL/dx, given dL/d(sublayer input).
void residual_begin_backward(const Config& c, const ResidualTrace& r, const LayerNormWeights& n, LayerNormWeights& gn,
                             const Mat& d_sublayer_input, Mat& dx) {
  if (c.norm_placement == NormPlacement::Pre) {
    Mat d_norm_input;
    layer_norm_backward(r.x, r.norm, n, d_sublayer_input, gn, d_norm_input);
    dx += d_norm_input;
  } else {
    dx += d_sublayer_input;
  }
}

// [SECTION] feed-forward:  out = drop(act(x W1^T + b1)) W2^T + b2
void ffn_forward(const Config& c, const Mat& x, const FeedForwardWeights& w, DropoutMasks& dropout,
                 BatchFeedForwardTrace& t, Mat& out) {
  linear_forward(x, w.fc1, t.hidden_pre);  // (N, F)
  t.hidden = t.hidden_pre;
  apply_activation(c.activation, t.hidden);
  if (dropout.on()) {
    dropout.make(t.keep, t.hidden.rows(), t.hidden.cols());
    t.hidden.array() *= t.keep.array();
  } else {
    t.keep.resize(0, 0);
  }
  linear_forward(t.hidden, w.fc2, out);  // (N, C)
}

void ffn_backward(const Config& c, const Mat& x, const FeedForwardWeights& w, const BatchFeedForwardTrace& t,
                  const Mat& dout, FeedForwardWeights& g, Mat& dx) {
  Mat dh;  // (N, F)
  linear_backward(t.hidden, w.fc2, dout, g.fc2, &dh);
  if (t.keep.size() > 0) dh.array() *= t.keep.array();
  activation_backward(c.activation, t.hidden_pre, dh);
  linear_backward(x, w.fc1, dh, g.fc1, &dx);
}

void check_batch(const Config& c, const Batch& b) {
  auto bad = [](const std::string& what) { fail(ErrorKind::Input, "batch_forward", what); };
  if (b.size <= 0 || b.source_length <= 0 || b.target_length <= 0) bad("empty batch");
  if (b.source_length > c.max_positions || b.target_length > c.max_positions)
    bad("a sequence is longer than max_positions (" + std::to_string(c.max_positions) + ")");
  if (b.source.size() != static_cast<size_t>(b.size) * b.source_length ||
      b.target_in.size() != static_cast<size_t>(b.size) * b.target_length ||
      b.target_out.size() != b.target_in.size())
    bad("batch arrays do not match its sizes");
  for (int id : b.source)
    if (id < 0 || id >= c.src_vocab_size) bad("source id " + std::to_string(id) + " outside the vocabulary");
  for (const auto* ids : {&b.target_in, &b.target_out})
    for (int id : *ids)
      if (id < 0 || id >= c.tgt_vocab_size) bad("target id " + std::to_string(id) + " outside the vocabulary");
}

}  // namespace

LossResult batch_forward(const Config& c, const ModelWeights& w, const Batch& batch, const DropoutSettings& settings,
                         float smoothing, BatchTrace& t, Mat* dlogits) {
  check_batch(c, batch);
  DropoutMasks dropout(settings);
  const int B = batch.size, S = batch.source_length, T = batch.target_length, H = c.n_heads;
  t.batch = B;
  t.source_length = S;
  t.target_length = T;
  const float scale = embedding_scale(c);

  // Encoder.
  Mat x;  // (B*S, C)
  embed(batch.source, S, w.src_embedding, position_table(c, w.src_positions), scale, x);
  if (dropout.on()) {
    dropout.make(t.src_keep, x.rows(), x.cols());
    x.array() *= t.src_keep.array();
  }
  t.encoder.resize(w.encoder_layers.size());
  for (size_t l = 0; l < w.encoder_layers.size(); ++l) {
    const EncoderLayerWeights& lw = w.encoder_layers[l];
    BatchEncoderLayerTrace& lt = t.encoder[l];
    const Mat& a_in = residual_begin(c, lt.attn_block, x, lw.self_attn_norm);
    attention_forward(a_in, a_in, B, S, S, lw.self_attn, H, batch.source, c.pad_id, false, dropout, lt.self_attn);
    residual_end(c, lt.attn_block, lt.self_attn.out, lw.self_attn_norm, dropout, x);
    const Mat& f_in = residual_begin(c, lt.ffn_block, x, lw.ffn_norm);
    Mat f;
    ffn_forward(c, f_in, lw.ffn, dropout, lt.ffn, f);
    residual_end(c, lt.ffn_block, f, lw.ffn_norm, dropout, x);
  }
  t.encoder_stack_out = std::move(x);
  if (c.encoder_final_norm) {
    layer_norm_forward(t.encoder_stack_out, w.encoder_norm, c.layer_norm_eps, t.encoder_norm);
    t.encoder_out = t.encoder_norm.out;
  } else {
    t.encoder_out = t.encoder_stack_out;
  }

  // Decoder.
  Mat y;  // (B*T, C)
  embed(batch.target_in, T, w.tgt_embedding, position_table(c, w.tgt_positions), scale, y);
  if (dropout.on()) {
    dropout.make(t.tgt_keep, y.rows(), y.cols());
    y.array() *= t.tgt_keep.array();
  }
  t.decoder.resize(w.decoder_layers.size());
  for (size_t l = 0; l < w.decoder_layers.size(); ++l) {
    const DecoderLayerWeights& lw = w.decoder_layers[l];
    BatchDecoderLayerTrace& lt = t.decoder[l];
    const Mat& s_in = residual_begin(c, lt.self_block, y, lw.self_attn_norm);
    attention_forward(s_in, s_in, B, T, T, lw.self_attn, H, batch.target_in, c.pad_id, true, dropout, lt.self_attn);
    residual_end(c, lt.self_block, lt.self_attn.out, lw.self_attn_norm, dropout, y);
    const Mat& c_in = residual_begin(c, lt.cross_block, y, lw.cross_attn_norm);
    attention_forward(c_in, t.encoder_out, B, T, S, lw.cross_attn, H, batch.source, c.pad_id, false, dropout,
                      lt.cross_attn);
    residual_end(c, lt.cross_block, lt.cross_attn.out, lw.cross_attn_norm, dropout, y);
    const Mat& f_in = residual_begin(c, lt.ffn_block, y, lw.ffn_norm);
    Mat f;
    ffn_forward(c, f_in, lw.ffn, dropout, lt.ffn, f);
    residual_end(c, lt.ffn_block, f, lw.ffn_norm, dropout, y);
  }
  t.decoder_stack_out = std::move(y);
  if (c.decoder_final_norm) {
    layer_norm_forward(t.decoder_stack_out, w.decoder_norm, c.layer_norm_eps, t.decoder_norm);
    t.decoder_out = t.decoder_norm.out;
  } else {
    t.decoder_out = t.decoder_stack_out;
  }
  linear_forward(t.decoder_out, w.generator, t.logits);  // (B*T, Vt)
  return label_smoothed_cross_entropy(t.logits, batch.target_out, c.pad_id, smoothing, dlogits);
}

void batch_backward(const Config& c, const ModelWeights& w, const Batch& batch, const BatchTrace& t,
                    const Mat& dlogits, ModelWeights& g) {
  const int B = t.batch, S = t.source_length, T = t.target_length, H = c.n_heads;
  const float scale = embedding_scale(c);

  // Decoder, from the logits down.
  Mat d;  // dL/d(decoder activations) (B*T, C)
  linear_backward(t.decoder_out, w.generator, dlogits, g.generator, &d);
  if (c.decoder_final_norm) {
    Mat dn;
    layer_norm_backward(t.decoder_stack_out, t.decoder_norm, w.decoder_norm, d, g.decoder_norm, dn);
    d = std::move(dn);
  }
  Mat d_encoder_out = Mat::Zero(t.encoder_out.rows(), t.encoder_out.cols());  // (B*S, C)
  Mat df, dx, d_in, d_kv;
  for (size_t l = w.decoder_layers.size(); l-- > 0;) {
    const DecoderLayerWeights& lw = w.decoder_layers[l];
    DecoderLayerWeights& lg = g.decoder_layers[l];
    const BatchDecoderLayerTrace& lt = t.decoder[l];

    residual_end_backward(c, lt.ffn_block, lw.ffn_norm, lg.ffn_norm, d, df, dx);
    ffn_backward(c, sublayer_input(c, lt.ffn_block), lw.ffn, lt.ffn, df, lg.ffn, d_in);
    residual_begin_backward(c, lt.ffn_block, lw.ffn_norm, lg.ffn_norm, d_in, dx);
    d = std::move(dx);

    residual_end_backward(c, lt.cross_block, lw.cross_attn_norm, lg.cross_attn_norm, d, df, dx);
    attention_backward(sublayer_input(c, lt.cross_block), t.encoder_out, B, T, S, lw.cross_attn, H, lt.cross_attn, df,
                       lg.cross_attn, d_in, d_kv);
    d_encoder_out += d_kv;
    residual_begin_backward(c, lt.cross_block, lw.cross_attn_norm, lg.cross_attn_norm, d_in, dx);
    d = std::move(dx);

    residual_end_backward(c, lt.self_block, lw.self_attn_norm, lg.self_attn_norm, d, df, dx);
    const Mat& s_in = sublayer_input(c, lt.self_block);
    attention_backward(s_in, s_in, B, T, T, lw.self_attn, H, lt.self_attn, df, lg.self_attn, d_in, d_kv);
    d_in += d_kv;
    residual_begin_backward(c, lt.self_block, lw.self_attn_norm, lg.self_attn_norm, d_in, dx);
    d = std::move(dx);
  }
  if (t.tgt_keep.size() > 0) d.array() *= t.tgt_keep.array();
  embedding_backward(batch.target_in, scale, d, g.tgt_embedding);
  if (c.positional_encoding == PositionalEncoding::Learned)
    for (Eigen::Index r = 0; r < d.rows(); ++r) g.tgt_positions.row(r % T) += d.row(r);

  // Encoder, from its output down.
  d = std::move(d_encoder_out);
  if (c.encoder_final_norm) {
    Mat dn;
    layer_norm_backward(t.encoder_stack_out, t.encoder_norm, w.encoder_norm, d, g.encoder_norm, dn);
    d = std::move(dn);
  }
  for (size_t l = w.encoder_layers.size(); l-- > 0;) {
    const EncoderLayerWeights& lw = w.encoder_layers[l];
    EncoderLayerWeights& lg = g.encoder_layers[l];
    const BatchEncoderLayerTrace& lt = t.encoder[l];

    residual_end_backward(c, lt.ffn_block, lw.ffn_norm, lg.ffn_norm, d, df, dx);
    ffn_backward(c, sublayer_input(c, lt.ffn_block), lw.ffn, lt.ffn, df, lg.ffn, d_in);
    residual_begin_backward(c, lt.ffn_block, lw.ffn_norm, lg.ffn_norm, d_in, dx);
    d = std::move(dx);

    residual_end_backward(c, lt.attn_block, lw.self_attn_norm, lg.self_attn_norm, d, df, dx);
    const Mat& a_in = sublayer_input(c, lt.attn_block);
    attention_backward(a_in, a_in, B, S, S, lw.self_attn, H, lt.self_attn, df, lg.self_attn, d_in, d_kv);
    d_in += d_kv;
    residual_begin_backward(c, lt.attn_block, lw.self_attn_norm, lg.self_attn_norm, d_in, dx);
    d = std::move(dx);
  }
  if (t.src_keep.size() > 0) d.array() *= t.src_keep.array();
  embedding_backward(batch.source, scale, d, g.src_embedding);
  if (c.positional_encoding == PositionalEncoding::Learned)
    for (Eigen::Index r = 0; r < d.rows(); ++r) g.src_positions.row(r % S) += d.row(r);
}

}  // namespace sf
