#include "transformer/forward.h"

#include <algorithm>
#include <cmath>

#include "nn/embedding.h"
#include "nn/linear.h"
#include "util/error.h"

namespace sf {

namespace {

std::string kind_layer_head(AttentionKind kind, int layer, int head) {
  return std::string(to_string(kind)) + "." + std::to_string(layer) + "." + std::to_string(head);
}

}  // namespace

std::vector<Mat> build_masks(const Config& config, const Interventions& iv, AttentionKind kind, int layer,
                             Eigen::Index first_query, Eigen::Index tq, const std::vector<int>& key_ids, bool causal) {
  const Eigen::Index tk = static_cast<Eigen::Index>(key_ids.size());
  Mat base = Mat::Zero(tq, tk);  // (Tq, Tk) 1 = blocked
  if (iv.padding_mask)
    for (Eigen::Index j = 0; j < tk; ++j)
      if (key_ids[static_cast<size_t>(j)] == config.pad_id) base.col(j).setOnes();
  if (causal)  // query row i is position first_query + i: keys after it are blocked
    for (Eigen::Index i = 0; i < tq; ++i) {
      const Eigen::Index after = first_query + i + 1;
      if (after < tk) base.row(i).tail(tk - after).setOnes();
    }
  std::vector<Mat> masks(static_cast<size_t>(config.n_heads), base);
  for (int h = 0; h < config.n_heads; ++h) {
    const CustomMask* custom = iv.custom_mask(kind, layer, h);
    if (!custom) continue;
    if (custom->blocked.rows() != first_query + tq || custom->blocked.cols() != tk)
      fail(ErrorKind::Input, "forward",
           "custom mask for " + kind_layer_head(kind, layer, h) + " is " +
               shape_string({custom->blocked.rows(), custom->blocked.cols()}) + ", the pass needs " +
               shape_string({first_query + tq, tk}));
    masks[static_cast<size_t>(h)] = custom->blocked.bottomRows(tq);
  }
  return masks;
}

namespace {

void run_encoder(const Config& config, const ModelWeights& weights, int from, Trace& trace) {
  const Interventions& iv = trace.interventions;
  const int L = config.n_encoder_layers;
  trace.encoder.resize(static_cast<size_t>(L));
  if (from < 0) {
    embed_tokens(config, weights, true, trace.src.ids, 0, iv.positional_encoding, trace.src);
    from = 0;
  }
  if (from >= L) return;
  const Eigen::Index S = static_cast<Eigen::Index>(trace.src.ids.size());
  for (int l = from; l < L; ++l) {
    const EncoderLayerWeights& w = weights.encoder_layers[static_cast<size_t>(l)];
    const Mat& x = l == 0 ? trace.src.sum : trace.encoder[static_cast<size_t>(l - 1)].out;
    AttentionFn self_attn = [&](const ConstMatRef& xq, AttentionTrace& t) {
      multi_head_attention_forward(xq, xq, w.self_attn, config.n_heads,
                                   build_masks(config, iv, AttentionKind::Encoder, l, 0, S, trace.src.ids, false),
                                   heads_on(config, iv, AttentionKind::Encoder, l), t);
    };
    encoder_layer_forward(config, w, x, self_attn, trace.encoder[static_cast<size_t>(l)]);
  }
  const Mat& last = trace.encoder.back().out;
  if (config.encoder_final_norm) {
    layer_norm_forward(last, weights.encoder_norm, config.layer_norm_eps, trace.encoder_norm);
    trace.enc_out = trace.encoder_norm.out;
  } else {
    trace.encoder_norm = {};
    trace.enc_out = last;
  }
}

void run_decoder(const Config& config, const ModelWeights& weights, int from, Trace& trace,
                 OutputLayer output = OutputLayer::AllRows) {
  const Interventions& iv = trace.interventions;
  const int L = config.n_decoder_layers;
  trace.decoder.resize(static_cast<size_t>(L));
  if (from < 0) {
    embed_tokens(config, weights, false, trace.tgt.ids, 0, iv.positional_encoding, trace.tgt);
    from = 0;
  }
  if (from >= L) return;
  const Eigen::Index T = static_cast<Eigen::Index>(trace.tgt.ids.size());
  for (int l = from; l < L; ++l) {
    const DecoderLayerWeights& w = weights.decoder_layers[static_cast<size_t>(l)];
    const Mat& x = l == 0 ? trace.tgt.sum : trace.decoder[static_cast<size_t>(l - 1)].out;
    AttentionFn self_attn = [&](const ConstMatRef& xq, AttentionTrace& t) {
      multi_head_attention_forward(
          xq, xq, w.self_attn, config.n_heads,
          build_masks(config, iv, AttentionKind::Decoder, l, 0, T, trace.tgt.ids, iv.causal_mask),
          heads_on(config, iv, AttentionKind::Decoder, l), t);
    };
    AttentionFn cross_attn = [&](const ConstMatRef& xq, AttentionTrace& t) {
      multi_head_attention_forward(xq, trace.enc_out, w.cross_attn, config.n_heads,
                                   build_masks(config, iv, AttentionKind::Cross, l, 0, T, trace.src.ids, false),
                                   heads_on(config, iv, AttentionKind::Cross, l), t);
    };
    decoder_layer_forward(config, w, x, self_attn, cross_attn, trace.decoder[static_cast<size_t>(l)]);
  }
  const Mat& last = trace.decoder.back().out;
  if (config.decoder_final_norm) {
    layer_norm_forward(last, weights.decoder_norm, config.layer_norm_eps, trace.decoder_norm);
    trace.dec_out = trace.decoder_norm.out;
  } else {
    trace.decoder_norm = {};
    trace.dec_out = last;
  }
  if (output == OutputLayer::AllRows) {
    output_forward(config, weights, trace.dec_out, trace.logits, trace.probs);
  } else {
    trace.logits.resize(trace.dec_out.rows(), weights.generator.weight.rows());
    trace.probs.resize(0, 0);
  }
}

void check_weights(const Config& config, const ModelWeights& weights) {
  if (static_cast<int>(weights.encoder_layers.size()) != config.n_encoder_layers ||
      static_cast<int>(weights.decoder_layers.size()) != config.n_decoder_layers)
    fail(ErrorKind::Shape, "forward",
         "weights hold " + std::to_string(weights.encoder_layers.size()) + "+" +
             std::to_string(weights.decoder_layers.size()) + " layers, the config says " +
             std::to_string(config.n_encoder_layers) + "+" + std::to_string(config.n_decoder_layers));
}

}  // namespace

std::vector<bool> heads_on(const Config& config, const Interventions& iv, AttentionKind kind, int layer) {
  std::vector<bool> on(static_cast<size_t>(config.n_heads), true);
  for (const HeadRef& h : iv.heads_off)
    if (h.kind == kind && h.layer == layer && h.head >= 0 && h.head < config.n_heads)
      on[static_cast<size_t>(h.head)] = false;
  return on;
}

void check_token_ids(const Config& config, const ModelWeights& weights, bool source, const std::vector<int>& ids,
                     int first_position) {
  const char* side = source ? "source" : "target";
  const int vocab = source ? config.src_vocab_size : config.tgt_vocab_size;
  const Mat& table = source ? weights.src_embedding : weights.tgt_embedding;
  if (ids.empty()) fail(ErrorKind::Input, "forward", std::string("the ") + side + " sequence is empty");
  const int end_position = first_position + static_cast<int>(ids.size());
  if (end_position > config.max_positions)
    fail(ErrorKind::Input, "forward",
         std::string("the ") + side + " sequence has " + std::to_string(end_position) +
             " tokens, the model accepts at most " + std::to_string(config.max_positions));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab || ids[i] >= table.rows())
      fail(ErrorKind::Input, "forward",
           std::string(side) + " token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
               ", outside the " + side + " vocabulary (size " + std::to_string(vocab) + ")");
  if (config.positional_encoding == PositionalEncoding::Learned) {
    const Mat& positions = source ? weights.src_positions : weights.tgt_positions;
    if (positions.rows() < end_position)
      fail(ErrorKind::Input, "forward",
           std::string("the ") + side + " sequence needs " + std::to_string(end_position) +
               " learned positions, the model has " + std::to_string(positions.rows()));
  }
}

void check_custom_mask_sizes(const Interventions& iv, int src_length, int tgt_length) {
  for (const CustomMask& m : iv.custom_masks) {
    const HeadRef& h = m.where;
    Eigen::Index tq = src_length, tk = src_length;
    if (h.kind != AttentionKind::Encoder) {
      if (tgt_length < 0) continue;  // the decoder input is not known yet
      tq = tgt_length;
      tk = h.kind == AttentionKind::Decoder ? tgt_length : src_length;
    }
    if (m.blocked.rows() != tq || m.blocked.cols() != tk)
      fail(ErrorKind::Input, "forward",
           "custom mask for " + kind_layer_head(h.kind, h.layer, h.head) + " is " +
               shape_string({m.blocked.rows(), m.blocked.cols()}) + ", the pass needs " + shape_string({tq, tk}));
  }
}

void embed_tokens(const Config& config, const ModelWeights& weights, bool source, const std::vector<int>& ids,
                  int first_position, bool positional_encoding, EmbeddingTrace& t) {
  check_token_ids(config, weights, source, ids, first_position);
  const Mat& table = source ? weights.src_embedding : weights.tgt_embedding;
  const float scale =
      config.embedding_scale == EmbeddingScale::SqrtDModel ? std::sqrt(static_cast<float>(config.d_model)) : 1.0f;
  t.ids = ids;
  embedding_forward(ids, table, scale, t.tok_embed);  // (N, C)
  const Eigen::Index n = static_cast<Eigen::Index>(ids.size());
  if (!positional_encoding) {
    t.pos = Mat::Zero(n, config.d_model);
  } else if (config.positional_encoding == PositionalEncoding::Learned) {
    const Mat& positions = source ? weights.src_positions : weights.tgt_positions;
    t.pos = positions.middleRows(first_position, n);
  } else {
    t.pos = cached_sinusoidal_encoding(config.max_positions, config.d_model).middleRows(first_position, n);
  }
  t.sum = t.tok_embed + t.pos;
}

void encoder_layer_forward(const Config& config, const EncoderLayerWeights& w, const ConstMatRef& x,
                           const AttentionFn& self_attn, EncoderLayerTrace& t) {
  const float eps = config.layer_norm_eps;
  if (config.norm_placement == NormPlacement::Post) {
    self_attn(x, t.self_attn);
    t.residual1 = x + t.self_attn.attn_out;                     // x + Attn(x)
    layer_norm_forward(t.residual1, w.self_attn_norm, eps, t.norm1);
    feed_forward_forward(t.norm1.out, w.ffn, config.activation, t.ffn);
    t.residual2 = t.norm1.out + t.ffn.out;                      // h + FFN(h)
    layer_norm_forward(t.residual2, w.ffn_norm, eps, t.norm2);
    t.out = t.norm2.out;
  } else {
    layer_norm_forward(x, w.self_attn_norm, eps, t.norm1);
    self_attn(t.norm1.out, t.self_attn);
    t.residual1 = x + t.self_attn.attn_out;                     // x + Attn(LN(x))
    layer_norm_forward(t.residual1, w.ffn_norm, eps, t.norm2);
    feed_forward_forward(t.norm2.out, w.ffn, config.activation, t.ffn);
    t.residual2 = t.residual1 + t.ffn.out;                      // h + FFN(LN(h))
    t.out = t.residual2;
  }
}

void decoder_layer_forward(const Config& config, const DecoderLayerWeights& w, const ConstMatRef& x,
                           const AttentionFn& self_attn, const AttentionFn& cross_attn, DecoderLayerTrace& t) {
  const float eps = config.layer_norm_eps;
  if (config.norm_placement == NormPlacement::Post) {
    self_attn(x, t.self_attn);
    t.residual1 = x + t.self_attn.attn_out;
    layer_norm_forward(t.residual1, w.self_attn_norm, eps, t.norm1);
    cross_attn(t.norm1.out, t.cross_attn);
    t.residual2 = t.norm1.out + t.cross_attn.attn_out;
    layer_norm_forward(t.residual2, w.cross_attn_norm, eps, t.norm2);
    feed_forward_forward(t.norm2.out, w.ffn, config.activation, t.ffn);
    t.residual3 = t.norm2.out + t.ffn.out;
    layer_norm_forward(t.residual3, w.ffn_norm, eps, t.norm3);
    t.out = t.norm3.out;
  } else {
    layer_norm_forward(x, w.self_attn_norm, eps, t.norm1);
    self_attn(t.norm1.out, t.self_attn);
    t.residual1 = x + t.self_attn.attn_out;
    layer_norm_forward(t.residual1, w.cross_attn_norm, eps, t.norm2);
    cross_attn(t.norm2.out, t.cross_attn);
    t.residual2 = t.residual1 + t.cross_attn.attn_out;
    layer_norm_forward(t.residual2, w.ffn_norm, eps, t.norm3);
    feed_forward_forward(t.norm3.out, w.ffn, config.activation, t.ffn);
    t.residual3 = t.residual2 + t.ffn.out;
    t.out = t.residual3;
  }
}

void output_forward(const Config& config, const ModelWeights& weights, const ConstMatRef& dec_out, Mat& logits,
                    Mat& probs) {
  linear_forward(dec_out, weights.generator, logits);  // (N, Vt)
  masked_softmax(logits, Mat(), probs);
}

void encode(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
            const Interventions& interventions, Trace& trace) {
  // Every check before the first change, so that a bad input leaves `trace` as it was.
  check_weights(config, weights);
  validate_interventions(config, interventions);
  check_token_ids(config, weights, true, src_ids, 0);
  check_custom_mask_sizes(interventions, static_cast<int>(src_ids.size()), -1);
  trace.interventions = interventions;
  trace.src.ids = src_ids;
  run_encoder(config, weights, -1, trace);
  trace.tgt.ids.clear();
  trace.logits.resize(0, 0);  // marks the decoder half as not computed (has_decoder); decode_pass refills it
}

bool reuse_encoder(const Config& config, const Trace& previous, const std::vector<int>& src_ids,
                   const Interventions& interventions, Trace& trace) {
  validate_interventions(config, interventions);
  check_custom_mask_sizes(interventions, static_cast<int>(src_ids.size()), -1);
  if (!previous.has_encoder() || previous.src.ids != src_ids ||
      static_cast<int>(previous.encoder.size()) != config.n_encoder_layers ||
      plan_recompute(config, previous.interventions, interventions).encoder_from < config.n_encoder_layers)
    return false;
  trace.interventions = interventions;
  trace.src = previous.src;
  trace.encoder = previous.encoder;
  trace.encoder_norm = previous.encoder_norm;
  trace.enc_out = previous.enc_out;
  trace.tgt.ids.clear();
  trace.logits.resize(0, 0);  // the decoder half is not computed (has_decoder), as after encode()
  return true;
}

void decode_pass(const Config& config, const ModelWeights& weights, const std::vector<int>& tgt_ids, Trace& trace,
                 OutputLayer output) {
  if (!trace.has_encoder()) fail(ErrorKind::Input, "decode_pass", "the trace holds no encoder pass");
  check_token_ids(config, weights, false, tgt_ids, 0);
  check_custom_mask_sizes(trace.interventions, static_cast<int>(trace.src.ids.size()),
                          static_cast<int>(tgt_ids.size()));
  trace.tgt.ids = tgt_ids;
  run_decoder(config, weights, -1, trace, output);
}

void output_rows(const ModelWeights& weights, int begin, int end, Trace& trace) {
  if (begin < 0 || end > trace.dec_out.rows() || trace.logits.rows() != trace.dec_out.rows())
    fail(ErrorKind::Shape, "output_rows", "rows " + std::to_string(begin) + ".." + std::to_string(end) +
                                              " of a pass of " + std::to_string(trace.dec_out.rows()));
  if (end <= begin) return;
  Mat rows;
  linear_forward(trace.dec_out.middleRows(begin, end - begin), weights.generator, rows);  // (end - begin, Vt)
  trace.logits.middleRows(begin, end - begin) = rows;
}

void complete_output(const ModelWeights& weights, int done_begin, int done_end, Trace& trace) {
  const int rows = static_cast<int>(trace.dec_out.rows());
  if (done_end <= done_begin) {
    done_begin = 0;
    done_end = 0;
  }
  output_rows(weights, 0, done_begin, trace);
  output_rows(weights, done_end, rows, trace);
  masked_softmax(trace.logits, Mat(), trace.probs);
}

Trace forward(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
              const std::vector<int>& tgt_ids, const Interventions& interventions) {
  Trace trace;
  encode(config, weights, src_ids, interventions, trace);
  decode_pass(config, weights, tgt_ids, trace);
  return trace;
}

void forward(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
             const std::vector<int>& tgt_ids, const Interventions& interventions, Trace& trace) {
  check_token_ids(config, weights, false, tgt_ids, 0);
  check_custom_mask_sizes(interventions, static_cast<int>(src_ids.size()), static_cast<int>(tgt_ids.size()));
  encode(config, weights, src_ids, interventions, trace);
  decode_pass(config, weights, tgt_ids, trace);
}

RecomputePlan plan_recompute(const Config& config, const Interventions& a, const Interventions& b) {
  RecomputePlan plan{config.n_encoder_layers, config.n_decoder_layers};
  auto touch = [&](AttentionKind kind, int layer) {
    if (kind == AttentionKind::Encoder) plan.encoder_from = std::min(plan.encoder_from, layer);
    else plan.decoder_from = std::min(plan.decoder_from, layer);
  };
  if (a.positional_encoding != b.positional_encoding) plan = {-1, -1};
  if (a.padding_mask != b.padding_mask) touch(AttentionKind::Encoder, 0), touch(AttentionKind::Decoder, 0);
  if (a.causal_mask != b.causal_mask) touch(AttentionKind::Decoder, 0);
  // Heads switched on or off: the symmetric difference of the two lists.
  for (const HeadRef& h : a.heads_off)
    if (!b.head_off(h.kind, h.layer, h.head)) touch(h.kind, h.layer);
  for (const HeadRef& h : b.heads_off)
    if (!a.head_off(h.kind, h.layer, h.head)) touch(h.kind, h.layer);
  // Custom masks added, removed or repainted.
  auto same_mask = [](const CustomMask* x, const CustomMask* y) { return x == y || (x && y && *x == *y); };
  for (const auto* list : {&a.custom_masks, &b.custom_masks})
    for (const CustomMask& m : *list) {
      const HeadRef& h = m.where;
      if (!same_mask(a.custom_mask(h.kind, h.layer, h.head), b.custom_mask(h.kind, h.layer, h.head)))
        touch(h.kind, h.layer);
    }
  if (plan.encoder_from < config.n_encoder_layers) plan.decoder_from = std::min(plan.decoder_from, 0);
  return plan;
}

RecomputePlan recompute(const Config& config, const ModelWeights& weights, const Interventions& interventions,
                        Trace& trace) {
  if (!trace.has_encoder() || !trace.has_decoder())
    fail(ErrorKind::Input, "recompute", "the trace holds no complete pass to start from");
  validate_interventions(config, interventions);
  check_custom_mask_sizes(interventions, static_cast<int>(trace.src.ids.size()),
                          static_cast<int>(trace.tgt.ids.size()));
  const RecomputePlan plan = plan_recompute(config, trace.interventions, interventions);
  trace.interventions = interventions;
  if (plan.encoder_from < config.n_encoder_layers) run_encoder(config, weights, plan.encoder_from, trace);
  if (plan.decoder_from < config.n_decoder_layers) run_decoder(config, weights, plan.decoder_from, trace);
  return plan;
}

}  // namespace sf
