#include "transformer/layers.h"

#include <algorithm>
#include <cmath>

#include "nn/backward.h"
#include "nn/embedding.h"
#include "nn/feed_forward.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "transformer/dropout_mask.h"
#include "transformer/layer_order.h"
#include "util/error.h"
#include "util/parallel.h"

namespace sf {

// [SECTION] dropout (the formulas: transformer/dropout_mask.h)

void Dropout::make(Mat& keep, Eigen::Index rows, Eigen::Index cols) {
  if (!on()) {
    keep.resize(0, 0);
    return;
  }
  const uint64_t key = dropout_mask_key(s_.seed, s_.step, ++site_);
  keep.resize(rows, cols);
  const float scale = 1.0f / (1.0f - s_.p), p = s_.p;
  float* out = keep.data();
  const int n = static_cast<int>(keep.size());
  // Captured by value: through references the compiler must reload key, p and scale after every store to out
  // (they might alias it), which made this loop 3.6 times slower than the same loop in place.
  parallel_for(n, 1 << 15, [out, key, p, scale](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      out[i] = dropout_keep(key, static_cast<uint64_t>(i), p, scale);
    }
  });
}

namespace {

// FFN(x) = drop(act(x W1^T + b1)) W2^T + b2
void feed_forward(const Config& config, const ConstMatRef& x, const FeedForwardWeights& w, Dropout* dropout,
                  FeedForwardTrace& t) {
  linear_forward(x, w.fc1, t.hidden_pre);  // (N, F)
  apply_activation(config.activation, t.hidden_pre, t.hidden);
  if (dropout) dropout->make(t.keep, t.hidden.rows(), t.hidden.cols());
  else t.keep.resize(0, 0);
  if (t.keep.size() > 0) t.hidden.array() *= t.keep.array();
  linear_forward(t.hidden, w.fc2, t.out);  // (N, C)
}

// The CPU's operations for the layer order (transformer/layer_order.h has the contract): Eigen matrices in host
// memory, the kernels of nn/.
struct CpuLayerOps {
  const Config& config;
  Dropout* dropout = nullptr;  // null: none (inference)

  const Mat& layer_norm(const Mat& x, const LayerNormWeights& w, LayerNormTrace& t) const {
    layer_norm_forward(x, w, config.layer_norm_eps, t);
    return t.out;
  }
  void residual(const Mat& x, const Mat& f, Mat& keep, Mat& sum) const {
    if (dropout) dropout->make(keep, f.rows(), f.cols());
    else keep.resize(0, 0);
    if (keep.size() > 0) sum = x + f.cwiseProduct(keep);
    else sum = x + f;
  }
  template <class LayerWeights>
  void feed_forward(const Mat& x, const LayerWeights& w, FeedForwardTrace& t) const {
    sf::feed_forward(config, x, w.ffn, dropout, t);
  }

  Mat layer_norm_backward(const Mat& x, const LayerNormTrace& t, const LayerNormWeights& w, LayerNormWeights& g,
                          const Mat& dy) const {
    Mat dx;
    sf::layer_norm_backward(x, t, w, dy, g, dx);
    return dx;
  }
  template <class LayerWeights>
  Mat feed_forward_backward(const Mat& x, const FeedForwardTrace& t, const LayerWeights& w, LayerWeights& g,
                            const Mat& d_out) const {
    Mat dh;  // (N, F)
    linear_backward(t.hidden, w.ffn.fc2, d_out, g.ffn.fc2, &dh);
    if (t.keep.size() > 0) dh.array() *= t.keep.array();
    activation_backward(config.activation, t.hidden_pre, dh);
    Mat dx;
    linear_backward(x, w.ffn.fc1, dh, g.ffn.fc1, &dx);
    return dx;
  }
  Mat times_keep(const Mat& d, const Mat& keep) const { return keep.size() > 0 ? Mat(d.cwiseProduct(keep)) : d; }
  Mat add(Mat a, const Mat& b) const {
    a += b;
    return a;
  }
};

// Keys and values of the self-attention from every row of its input (what a KV cache keeps of a layer).
void self_attention_keys_values(const Config& config, const AttentionWeights& w, const Mat& in, AttentionTrace& t) {
  attention_projection(config, in, w.k, t.keys);    // (N, C)
  attention_projection(config, in, w.v, t.values);  // (N, C)
}

}  // namespace

// [SECTION] embeddings

void check_token_ids(const Config& config, bool source, const std::vector<int>& ids,
                     const std::vector<int>& positions) {
  const char* side = source ? "source" : "target";
  const int vocab = source ? config.src_vocab_size : config.tgt_vocab_size;
  if (ids.empty())
    fail(ErrorKind::Input, source ? ErrorCode::SourceEmpty : ErrorCode::TargetEmpty, "forward", {},
         std::string("the ") + side + " sequence is empty");
  if (positions.size() != ids.size())
    fail(ErrorKind::Shape, "forward", std::to_string(ids.size()) + " " + side + " ids but " +
                                          std::to_string(positions.size()) + " positions");
  // The length a sequence reaches: one past its last position.
  const int length = *std::max_element(positions.begin(), positions.end()) + 1;
  if (length > config.max_positions)
    fail(ErrorKind::Input, source ? ErrorCode::SourceTooLong : ErrorCode::TargetTooLong, "forward",
         {{"tokens", length}, {"limit", config.max_positions}},
         std::string("the ") + side + " sequence has " + std::to_string(length) + " tokens, the model accepts at most " +
             std::to_string(config.max_positions));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (positions[i] < 0)
      fail(ErrorKind::Shape, "forward", std::string(side) + " token " + std::to_string(i) + " has a negative position");
    if (ids[i] < 0 || ids[i] >= vocab)
      fail(ErrorKind::Input, "forward",
           std::string(side) + " token " + std::to_string(i) + " has id " + std::to_string(ids[i]) + ", outside the " +
               side + " vocabulary (size " + std::to_string(vocab) + ")");
  }
}

void check_embedding_input(const Config& config, const ModelWeights& weights, bool source, const std::vector<int>& ids,
                           const std::vector<int>& positions) {
  check_token_ids(config, source, ids, positions);
  const char* side = source ? "source" : "target";
  const Mat& table = source ? weights.src_embedding : weights.tgt_embedding;
  const Mat& learned = source ? weights.src_positions : weights.tgt_positions;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= table.rows())  // weights smaller than their config
      fail(ErrorKind::Input, "forward",
           std::string(side) + " token " + std::to_string(i) + " has id " + std::to_string(ids[i]) + ", outside the " +
               side + " embedding table (" + std::to_string(table.rows()) + " rows)");
  const int length = *std::max_element(positions.begin(), positions.end()) + 1;
  if (config.positional_encoding == PositionalEncoding::Learned && learned.rows() < length)
    fail(ErrorKind::Input, "forward",
         std::string("the ") + side + " sequence needs " + std::to_string(length) + " learned positions, the model has " +
             std::to_string(learned.rows()));
  if (source && config.type_vocab_size > 0 && weights.src_token_types.rows() < 1)  // weights smaller than their config
    fail(ErrorKind::Input, "forward", "the model has token types (type_vocab_size " +
                                          std::to_string(config.type_vocab_size) + ") but no token-type table");
}

void embed_rows(const Config& config, const ModelWeights& weights, bool source, const std::vector<int>& ids,
                const std::vector<int>& positions, bool positional_encoding, Dropout* dropout, EmbeddingTrace& t) {
  check_embedding_input(config, weights, source, ids, positions);
  const Mat& table = source ? weights.src_embedding : weights.tgt_embedding;
  const Mat& learned = source ? weights.src_positions : weights.tgt_positions;
  const bool is_learned = config.positional_encoding == PositionalEncoding::Learned;
  const float scale =
      config.embedding_scale == EmbeddingScale::SqrtDModel ? std::sqrt(static_cast<float>(config.d_model)) : 1.0f;
  t.ids = ids;
  embedding_forward(ids, table, scale, t.tok_embed);  // (N, C)
  const Eigen::Index n = static_cast<Eigen::Index>(ids.size());
  if (!t.token_scale.empty()) {  // (integrated gradients: each row's embedding on its way from 0)
    if (static_cast<Eigen::Index>(t.token_scale.size()) != n)
      fail(ErrorKind::Input, "forward", std::to_string(t.token_scale.size()) + " token scales for " +
                                            std::to_string(n) + " tokens");
    for (Eigen::Index i = 0; i < n; ++i) t.tok_embed.row(i) *= t.token_scale[static_cast<size_t>(i)];
  }
  if (!positional_encoding) {
    t.pos = Mat::Zero(n, config.d_model);
  } else {
    const Mat& position_table =
        is_learned ? learned : cached_sinusoidal_encoding(config.max_positions, config.d_model, config.sinusoid_layout);  // (P, C)
    t.pos.resize(n, config.d_model);
    for (Eigen::Index i = 0; i < n; ++i) t.pos.row(i) = position_table.row(positions[static_cast<size_t>(i)]);
  }
  // BERT's parts, source side: every token is of type 0 (one text), so row 0 of the token-type table is added to
  // each; with the embedding norm the stack reads LN(tok + pos + type) (modeling_bert.py's BertEmbeddings).
  const bool types = source && config.type_vocab_size > 0, norm = source && config.embedding_norm;
  if (types) t.type_embed = weights.src_token_types.row(0).replicate(n, 1);  // (N, C)
  else t.type_embed.resize(0, 0);
  if (dropout) dropout->make(t.keep, n, config.d_model);
  else t.keep.resize(0, 0);
  if (norm) {
    t.embed_sum = t.tok_embed + t.pos;  // (N, C)
    if (types) t.embed_sum += t.type_embed;
    layer_norm_forward(t.embed_sum, weights.embedding_norm, config.layer_norm_eps, t.embed_norm);
    if (t.keep.size() > 0) t.sum = t.embed_norm.out.cwiseProduct(t.keep);
    else t.sum = t.embed_norm.out;
    return;
  }
  t.embed_sum.resize(0, 0);
  t.embed_norm = LayerNormTrace{};
  if (types) {
    if (t.keep.size() > 0) t.sum = (t.tok_embed + t.pos + t.type_embed).cwiseProduct(t.keep);
    else t.sum = t.tok_embed + t.pos + t.type_embed;
    return;
  }
  if (t.keep.size() > 0) t.sum = (t.tok_embed + t.pos).cwiseProduct(t.keep);
  else t.sum = t.tok_embed + t.pos;
}

void embed_rows_backward(const Config& config, const ModelWeights& weights, bool source, const EmbeddingTrace& t,
                         const std::vector<int>& positions, bool positional_encoding, Mat d_sum, ModelWeights& grads,
                         Mat* d_tok_embed) {
  if (t.keep.size() > 0) d_sum.array() *= t.keep.array();
  // BERT's parts, source side: sum = LN(tok + pos + type), type = row 0 of the token-type table for every token.
  // From here d_sum is dL/d(tok + pos [+ type]), the gradient each addend takes.
  if (source && config.embedding_norm) {
    Mat d_in;  // (N, C)
    layer_norm_backward(t.embed_sum, t.embed_norm, weights.embedding_norm, d_sum, grads.embedding_norm, d_in);
    d_sum = std::move(d_in);
  }
  if (source && config.type_vocab_size > 0 && grads.src_token_types.size() > 0)
    grads.src_token_types.row(0) += d_sum.colwise().sum();
  if (d_tok_embed) *d_tok_embed = d_sum;
  const float scale =
      config.embedding_scale == EmbeddingScale::SqrtDModel ? std::sqrt(static_cast<float>(config.d_model)) : 1.0f;
  if (t.token_scale.empty()) {
    embedding_backward(t.ids, scale, d_sum, source ? grads.src_embedding : grads.tgt_embedding);
  } else {  // tok_embed = s_i E[id] scale: the table's rows take s_i times the row's gradient
    Mat d_scaled = d_sum;
    for (Eigen::Index i = 0; i < d_scaled.rows(); ++i) d_scaled.row(i) *= t.token_scale[static_cast<size_t>(i)];
    embedding_backward(t.ids, scale, d_scaled, source ? grads.src_embedding : grads.tgt_embedding);
  }
  Mat& position_grads = source ? grads.src_positions : grads.tgt_positions;
  if (positional_encoding && config.positional_encoding == PositionalEncoding::Learned && position_grads.size() > 0) {
    Mat& g = position_grads;
    for (Eigen::Index r = 0; r < d_sum.rows(); ++r) g.row(positions[static_cast<size_t>(r)]) += d_sum.row(r);
  }
}

// [SECTION] layers

void attention_projection(const Config& config, const ConstMatRef& x, const LinearWeights& w, Mat& out) {
  if (config.attention == AttentionStyle::SplitHeads) {
    linear_forward(x, w, out);  // (N, C)
    return;
  }
  // Each row's H pieces of D through the one (D, D) map: x viewed as (N*H, D), row-major.
  const Eigen::Index n = x.rows(), C = config.d_model, D = config.head_dim();
  const Mat contiguous = x;
  Mat pieces;
  linear_forward(Eigen::Map<const Mat>(contiguous.data(), n * config.n_heads, D), w, pieces);  // (N*H, D)
  out = Eigen::Map<const Mat>(pieces.data(), n, C);
}

Mat reshape_heads_to_columns(const ConstMatRef& x, int n_heads) {
  // x (T, C) read as (H, T, D): head h's row i is flat piece h*T + i. Out (T, C): head h in columns h*D.., as
  // SplitHeads keeps it, so attend() serves both styles.
  const Eigen::Index T = x.rows(), D = x.cols() / n_heads;
  const Mat contiguous = x;
  const Eigen::Map<const Mat> pieces(contiguous.data(), T * n_heads, D);  // (H*T, D)
  Mat out(T, x.cols());
  for (int h = 0; h < n_heads; ++h) out.middleCols(h * D, D) = pieces.middleRows(h * T, T);
  return out;
}

Mat columns_to_reshape_heads(const ConstMatRef& x, int n_heads) {
  const Eigen::Index T = x.rows(), D = x.cols() / n_heads;
  Mat pieces(T * n_heads, D);  // (H*T, D): head h's rows h*T.., then read back as (T, C)
  for (int h = 0; h < n_heads; ++h) pieces.middleRows(h * T, T) = x.middleCols(h * D, D);
  return Eigen::Map<const Mat>(pieces.data(), T, x.cols());
}

void encoder_layer_forward(const Config& config, const EncoderLayerWeights& w, const Mat& x,
                           const AttentionFn& self_attn, Dropout* dropout, EncoderLayerTrace& t) {
  CpuLayerOps ops{config, dropout};
  auto self = [&](const Mat& x_all, const Mat& in, AttentionTrace& a) -> const Mat& {
    self_attention_keys_values(config, w.self_attn, in, a);
    self_attn(in, a);
    return x_all;
  };
  layer_order::encoder_layer(ops, config.norm_placement == NormPlacement::Post, w, x, self, t);
}

void decoder_layer_forward(const Config& config, const DecoderLayerWeights& w, const Mat& x,
                           const std::vector<int>* query_rows, const AttentionFn& self_attn,
                           const AttentionFn& cross_attn, Dropout* dropout, DecoderLayerTrace& t) {
  CpuLayerOps ops{config, dropout};
  Mat x_rows, in_rows;  // the query rows of x and of the attention's input, when not all go on
  auto self = [&](const Mat& x_all, const Mat& in, AttentionTrace& a) -> const Mat& {
    self_attention_keys_values(config, w.self_attn, in, a);  // every row's keys and values
    if (!query_rows) {
      self_attn(in, a);
      return x_all;
    }
    x_rows.resize(static_cast<Eigen::Index>(query_rows->size()), x_all.cols());
    in_rows.resize(x_rows.rows(), in.cols());
    for (size_t i = 0; i < query_rows->size(); ++i) {
      x_rows.row(static_cast<Eigen::Index>(i)) = x_all.row((*query_rows)[i]);
      in_rows.row(static_cast<Eigen::Index>(i)) = in.row((*query_rows)[i]);
    }
    self_attn(in_rows, a);
    return x_rows;
  };
  layer_order::decoder_layer(ops, config.norm_placement == NormPlacement::Post, config.has_cross_attention(), w, x,
                             self, cross_attn, t);
}

void encoder_layer_backward(const Config& config, const EncoderLayerWeights& w, const Mat& x,
                            const EncoderLayerTrace& t, const AttentionBackwardFn& self_attn, Mat d_out,
                            EncoderLayerWeights& g, Mat& dx) {
  CpuLayerOps ops{config};
  auto self = [&](const Mat& in, const AttentionTrace& a, const Mat& d) {
    Mat d_in;
    self_attn(in, a, d, g.self_attn, d_in);
    return d_in;
  };
  dx = layer_order::encoder_layer_backward(ops, config.norm_placement == NormPlacement::Post, w, g, x, t, self, d_out);
}

void decoder_layer_backward(const Config& config, const DecoderLayerWeights& w, const Mat& x,
                            const DecoderLayerTrace& t, const AttentionBackwardFn& self_attn,
                            const AttentionBackwardFn& cross_attn, Mat d_out, DecoderLayerWeights& g, Mat& dx) {
  CpuLayerOps ops{config};
  auto self = [&](const Mat& in, const AttentionTrace& a, const Mat& d) {
    Mat d_in;
    self_attn(in, a, d, g.self_attn, d_in);
    return d_in;
  };
  auto cross = [&](const Mat& in, const AttentionTrace& a, const Mat& d) {
    Mat d_in;
    cross_attn(in, a, d, g.cross_attn, d_in);
    return d_in;
  };
  dx = layer_order::decoder_layer_backward(ops, config.norm_placement == NormPlacement::Post,
                                           config.has_cross_attention(), w, g, x, t, self, cross, d_out);
}

// [SECTION] final norm and output layer

void final_norm_forward(const Config& config, bool present, const LayerNormWeights& w, const Mat& x,
                        LayerNormTrace& t, Mat& out) {
  if (present) {
    layer_norm_forward(x, w, config.layer_norm_eps, t);
    out = t.out;
  } else {
    t = {};
    out = x;
  }
}

void output_logits(const ModelWeights& weights, const ConstMatRef& x, Mat& logits) {
  linear_forward(x, weights.generator, logits);  // (N, Vt)
}

void output_head_forward(const Config& config, const ModelWeights& weights, const ConstMatRef& x, OutputHeadTrace& t,
                         Mat& logits) {
  if (config.output_head != OutputHead::MaskedLM) {
    t = OutputHeadTrace{};
    output_logits(weights, x, logits);
    return;
  }
  // BertLMPredictionHead: t = LN(act(x W_d^T + b_d)), logits = t W^T + b
  linear_forward(x, weights.head_transform, t.dense);  // (N, C)
  apply_activation(config.activation, t.dense, t.act);  // (N, C)
  layer_norm_forward(t.act, weights.head_norm, config.layer_norm_eps, t.norm);
  output_logits(weights, t.norm.out, logits);  // (N, V)
}

// [SECTION] masks

AttentionMask build_mask(const Config& config, const Interventions& iv, AttentionKind kind, int layer,
                         Eigen::Index first_query, Eigen::Index tq, const std::vector<int>& key_ids, bool causal,
                         const std::vector<int>* query_ids) {
  const Eigen::Index tk = static_cast<Eigen::Index>(key_ids.size());
  AttentionMask mask;
  // The note's make_pad_mask(query, key) blocks padded keys and padded queries (with the source's pad id on
  // both sides); its decoder self-attention mask is the causal triangle alone.
  const bool reshape = config.attention == AttentionStyle::ReshapeHeads;
  mask.blocked_row_uniform = reshape;
  if (reshape && iv.padding_mask && kind != AttentionKind::Decoder) {
    if (!query_ids || static_cast<Eigen::Index>(query_ids->size()) != tq)
      fail(ErrorKind::Input, "build_mask", "this model's padding mask needs the ids of the queries");
    for (Eigen::Index i = 0; i < tq; ++i)
      if ((*query_ids)[static_cast<size_t>(i)] == config.pad_id) {
        if (mask.query_blocked.empty()) mask.query_blocked.assign(static_cast<size_t>(tq), 0);
        mask.query_blocked[static_cast<size_t>(i)] = 1;
      }
  }
  // A decoder that starts with <pad> (Marian: bos_id == pad_id) has no padding mask on its own tokens, as
  // Hugging Face's generation passes none: the start token must stay visible, and padded rows of a training
  // batch come after every real token, where the causal mask already hides them.
  const bool decoder_starts_with_pad = kind == AttentionKind::Decoder && config.bos_id == config.pad_id;
  if (iv.padding_mask && !(reshape && kind == AttentionKind::Decoder) && !decoder_starts_with_pad)
    for (Eigen::Index j = 0; j < tk; ++j)
      if (key_ids[static_cast<size_t>(j)] == config.pad_id) {
        if (mask.key_blocked.empty()) mask.key_blocked.assign(static_cast<size_t>(tk), 0);
        mask.key_blocked[static_cast<size_t>(j)] = 1;
      }
  mask.causal = causal;
  if (causal)  // query row i is position first_query + i
    for (Eigen::Index i = 0; i < tq; ++i) mask.query_positions.push_back(static_cast<int>(first_query + i));
  for (int h = 0; h < config.n_heads; ++h) {
    const CustomMask* custom = iv.custom_mask(kind, layer, h);
    if (!custom) continue;
    if (custom->blocked.rows() != first_query + tq || custom->blocked.cols() != tk)
      fail(ErrorKind::Input, "forward",
           "custom mask for " + head_ref_text({kind, layer, h}) + " is " + shape_string({custom->blocked.rows(), custom->blocked.cols()}) + ", the pass needs " +
               shape_string({first_query + tq, tk}));
    if (mask.painted.empty()) mask.painted.resize(static_cast<size_t>(config.n_heads));
    mask.painted[static_cast<size_t>(h)] = custom->blocked.bottomRows(tq);
  }
  return mask;
}

std::vector<bool> heads_on(const Config& config, const Interventions& iv, AttentionKind kind, int layer) {
  std::vector<bool> on(static_cast<size_t>(config.n_heads), true);
  for (const HeadRef& h : iv.heads_off)
    if (h.kind == kind && h.layer == layer && h.head >= 0 && h.head < config.n_heads)
      on[static_cast<size_t>(h.head)] = false;
  return on;
}

float attention_scale(const Config& config) {
  // The note divides by embed_size ** (1/2): the model's width, not the head's.
  const int by = config.attention == AttentionStyle::ReshapeHeads ? config.d_model : config.head_dim();
  return 1.0f / std::sqrt(static_cast<float>(by));
}

}  // namespace sf
