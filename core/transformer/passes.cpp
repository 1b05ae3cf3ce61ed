#include "transformer/passes.h"

#include <algorithm>
#include <array>
#include <functional>

#include "nn/backward.h"
#include "nn/linear.h"
#include "util/error.h"
#include "util/parallel.h"

namespace sf {

// [SECTION] KV cache

bool kv_cache_exact(const Config& config, const Interventions& iv) {
  // ReshapeHeads mixes the rows of the whole sequence into every head: a new token changes every earlier row.
  if (config.attention == AttentionStyle::ReshapeHeads) return false;
  return kv_cache_exact(iv);
}

bool kv_cache_exact(const Interventions& iv) {
  if (!iv.causal_mask) return false;
  // A painted decoder self-attention mask keeps the cache exact while it lets no query see a later key (cells
  // past its edge take the causal mask, fit_decoder_masks); cross-attention masks concern one query row each.
  for (const CustomMask& m : iv.custom_masks)
    if (m.where.kind == AttentionKind::Decoder)
      for (Eigen::Index i = 0; i < m.blocked.rows(); ++i)
        for (Eigen::Index j = i + 1; j < m.blocked.cols(); ++j)
          if (m.blocked(i, j) <= 0.5f) return false;
  return true;
}

KvCache empty_kv_cache(const Config& config) {
  KvCache cache;
  cache.keys.assign(static_cast<size_t>(config.n_decoder_layers), Mat(0, config.d_model));
  cache.values = cache.keys;
  return cache;
}

void truncate_kv_cache(KvCache& cache, int length) {
  if (length < 0 || length > cache.length())
    fail(ErrorKind::Input, "truncate_kv_cache",
         "length " + std::to_string(length) + " outside 0.." + std::to_string(cache.length()));
  cache.tokens.resize(static_cast<size_t>(length));  // the rows past it stay allocated, to be written over
}

CrossKeysValues cross_keys_values(const Config& config, const ModelWeights& weights, const Trace& encoded) {
  if (!config.has_cross_attention()) return {};  // a decoder-only model's: none (decoder_pass reads none)
  if (!encoded.has_encoder()) fail(ErrorKind::Input, "cross_keys_values", "the trace holds no encoder pass");
  CrossKeysValues kv;
  kv.keys.resize(static_cast<size_t>(config.n_decoder_layers));
  kv.values.resize(kv.keys.size());
  for (size_t l = 0; l < kv.keys.size(); ++l) {
    attention_projection(config, encoded.enc_out, weights.decoder_layers[l].cross_attn.k, kv.keys[l]);    // (S, C)
    attention_projection(config, encoded.enc_out, weights.decoder_layers[l].cross_attn.v, kv.values[l]);  // (S, C)
  }
  return kv;
}

namespace {

// [SECTION] attention over the sequences of a pass

// One sequence's part of an attention sublayer: its rows of the sublayer's queries, its keys and values (rows
// of larger matrices: the pass's own rows, a KV cache, the encoder's), and its mask (build_mask).
struct SequenceAttention {
  Eigen::Index q_begin = 0, q_rows = 0;
  const Mat* keys = nullptr;
  const Mat* values = nullptr;
  Eigen::Index k_begin = 0, k_rows = 0;
  AttentionMask mask;
};

// Per sequence attend() of t.queries over its keys and values under its mask, into t.heads_out (Rq, C), keeping
// what `record` asks. ReshapeHeads: each sequence's queries, keys and values are put into SplitHeads' columns
// for attend() and its heads' output back. The middle of attention_sublayer, and what assemble_traced_pass
// computes again over a whole sequence from rows recorded in chunks.
void attend_sequences(const Config& config, std::vector<SequenceAttention>& seqs, const std::vector<bool>& on,
                      Record record, Dropout* dropout, AttentionTrace& t) {
  const int H = config.n_heads;
  const Eigen::Index D = config.head_dim();
  const size_t n = seqs.size(), nh = n * static_cast<size_t>(H);
  const bool reshape = config.attention == AttentionStyle::ReshapeHeads;
  t.heads_out.resize(t.queries.rows(), config.d_model);
  const bool keep_probs = record == Record::Backward || record == Record::Trace, trace = record == Record::Trace;
  t.probs.resize(keep_probs ? nh : 0);
  t.scores.resize(trace ? nh : 0);
  t.head_out.resize(trace ? nh : 0);
  t.keep.clear();
  if (dropout && dropout->on()) {  // made in order, before the sequences run in parallel: reproducible masks
    t.keep.resize(nh);
    for (size_t s = 0; s < n; ++s)
      for (int h = 0; h < H; ++h) dropout->make(t.keep[s * H + h], seqs[s].q_rows, seqs[s].k_rows);
  }
  const float scale = attention_scale(config);
  std::vector<std::array<Mat, 3>> columns(reshape ? n : 0);  // ReshapeHeads: each sequence's q, k, v as columns
  auto run = [&](size_t s) {
    const SequenceAttention& a = seqs[s];
    const std::span<Mat> none;
    const AttendRecord rec{trace ? std::span<Mat>(t.scores).subspan(s * H, H) : none,
                           keep_probs ? std::span<Mat>(t.probs).subspan(s * H, H) : none,
                           trace ? std::span<Mat>(t.head_out).subspan(s * H, H) : none};
    const std::span<const Mat> keep =
        t.keep.empty() ? std::span<const Mat>() : std::span<const Mat>(t.keep).subspan(s * H, H);
    if (!reshape) {
      attend(t.queries.middleRows(a.q_begin, a.q_rows), a.keys->middleRows(a.k_begin, a.k_rows),
             a.values->middleRows(a.k_begin, a.k_rows), H, scale, a.mask, on, keep,
             t.heads_out.middleRows(a.q_begin, a.q_rows), rec);
      return;
    }
    std::array<Mat, 3>& qkv = columns[s];
    qkv[0] = reshape_heads_to_columns(t.queries.middleRows(a.q_begin, a.q_rows), H);  // (Tq, C)
    qkv[1] = reshape_heads_to_columns(a.keys->middleRows(a.k_begin, a.k_rows), H);    // (Tk, C)
    qkv[2] = reshape_heads_to_columns(a.values->middleRows(a.k_begin, a.k_rows), H);  // (Tk, C)
    Mat out(a.q_rows, config.d_model);
    attend(qkv[0], qkv[1], qkv[2], H, scale, a.mask, on, keep, out, rec);
    t.heads_out.middleRows(a.q_begin, a.q_rows) = columns_to_reshape_heads(out, H);  // the note's reshape back
  };
  if (n == 1) run(0);
  else parallel_for(static_cast<int>(n), 1, [&](int begin, int end) {
      for (int s = begin; s < end; ++s) run(static_cast<size_t>(s));
    });
  if (!trace) return;
  // The app's record: each head's q, k, v, and each sequence's mask as it ran.
  t.q.resize(nh);
  t.k.resize(nh);
  t.v.resize(nh);
  t.masks.resize(n);
  for (size_t s = 0; s < n; ++s) t.masks[s] = seqs[s].mask;
  // Shared out on the pool where the maps are large (a long sentence); a short one's copies cost less than that.
  Eigen::Index cells = 0;
  for (const SequenceAttention& a : seqs) cells += a.q_rows * a.k_rows * H;
  parallel_for(static_cast<int>(nh), cells >= (1 << 16) ? 1 : static_cast<int>(nh), [&](int begin, int end) {
    for (int sh = begin; sh < end; ++sh) {
      const size_t s = static_cast<size_t>(sh / H);
      const int h = sh % H;
      const SequenceAttention& a = seqs[s];
      if (reshape) {
        t.q[s * H + h] = columns[s][0].middleCols(h * D, D);
        t.k[s * H + h] = columns[s][1].middleCols(h * D, D);
        t.v[s * H + h] = columns[s][2].middleCols(h * D, D);
      } else {
        t.q[s * H + h] = t.queries.block(a.q_begin, h * D, a.q_rows, D);
        t.k[s * H + h] = a.keys->block(a.k_begin, h * D, a.k_rows, D);
        t.v[s * H + h] = a.values->block(a.k_begin, h * D, a.k_rows, D);
      }
    }
  });
}

// queries = x_q W_q^T + b; attend_sequences(); attn_out = heads_out W_o^T + b.
void attention_sublayer(const Config& config, const AttentionWeights& w, const ConstMatRef& x_q,
                        std::vector<SequenceAttention>& seqs, const std::vector<bool>& on, Record record,
                        Dropout* dropout, AttentionTrace& t) {
  attention_projection(config, x_q, w.q, t.queries);  // (Rq, C)
  attend_sequences(config, seqs, on, record, dropout, t);
  linear_forward(t.heads_out, w.out, t.attn_out);  // (Rq, C)
}

// The adjoint of attention_sublayer for a recorded pass whose keys and values are t.keys, t.values (the rows
// of x_kv projected): accumulates the weights' gradients, writes dL/dx_q and dL/dx_kv.
void attention_sublayer_backward(const Config& config, const AttentionWeights& w, const ConstMatRef& x_q,
                                 const ConstMatRef& x_kv, const std::vector<SequenceAttention>& seqs,
                                 const std::vector<bool>& on, const AttentionTrace& t, const Mat& d_attn_out,
                                 AttentionWeights& g, Mat& d_x_q, Mat& d_x_kv) {
  if (config.attention != AttentionStyle::SplitHeads)
    fail(ErrorKind::Unsupported, "training",
         "the backward pass has no reshape_heads attention (the from-scratch family): such a model is not trained here");
  const int H = config.n_heads;
  Mat d_heads;  // (Rq, C)
  linear_backward(t.heads_out, w.out, d_attn_out, g.out, &d_heads);
  Mat dq = Mat::Zero(t.queries.rows(), t.queries.cols()), dk = Mat::Zero(t.keys.rows(), t.keys.cols()),
      dv = Mat::Zero(t.values.rows(), t.values.cols());
  const float scale = attention_scale(config);
  parallel_for(static_cast<int>(seqs.size()), 1, [&](int begin, int end) {
    for (int s = begin; s < end; ++s) {
      const SequenceAttention& a = seqs[static_cast<size_t>(s)];
      const size_t first = static_cast<size_t>(s) * H;
      attend_backward(t.queries.middleRows(a.q_begin, a.q_rows), t.keys.middleRows(a.k_begin, a.k_rows),
                      t.values.middleRows(a.k_begin, a.k_rows), H, scale,
                      std::span<const Mat>(t.probs).subspan(first, H),
                      t.keep.empty() ? std::span<const Mat>() : std::span<const Mat>(t.keep).subspan(first, H), on,
                      d_heads.middleRows(a.q_begin, a.q_rows), dq.middleRows(a.q_begin, a.q_rows),
                      dk.middleRows(a.k_begin, a.k_rows), dv.middleRows(a.k_begin, a.k_rows));
    }
  });
  linear_backward(x_q, w.q, dq, g.q, &d_x_q);
  Mat d_from_v;
  linear_backward(x_kv, w.k, dk, g.k, &d_x_kv);
  linear_backward(x_kv, w.v, dv, g.v, &d_from_v);
  d_x_kv += d_from_v;
}

// Rows `rows` of m, in that order.
Mat select_rows(const Mat& m, const std::vector<int>& rows) {
  Mat out(static_cast<Eigen::Index>(rows.size()), m.cols());
  for (size_t i = 0; i < rows.size(); ++i) out.row(static_cast<Eigen::Index>(i)) = m.row(rows[i]);
  return out;
}

void append_rows(Mat& cache, int length, const ConstMatRef& rows) {
  const Eigen::Index need = length + rows.rows();
  if (cache.rows() < need) cache.conservativeResize(std::max<Eigen::Index>({need, 2 * cache.rows(), 16}), rows.cols());
  cache.middleRows(length, rows.rows()) = rows;
}

// The uniform layout of a training batch or of the app's single sequence: sequence b is rows b*Tq.. of the
// queries and b*Tk.. of the keys.
std::vector<SequenceAttention> uniform_layout(int sequences, Eigen::Index tq, Eigen::Index tk, const Mat& keys,
                                              const Mat& values) {
  std::vector<SequenceAttention> seqs(static_cast<size_t>(sequences));
  for (int b = 0; b < sequences; ++b)
    seqs[static_cast<size_t>(b)] = {b * tq, tq, &keys, &values, b * tk, tk, AttentionMask{}};
  return seqs;
}

// The backward of a self-attention sublayer over `sequences` sequences of length n each: its keys and values
// come from its own input, so their gradient joins dL/dx_q.
AttentionBackwardFn self_attention_backward(const Config& config, const AttentionWeights& w, int sequences,
                                            Eigen::Index n, std::vector<bool> on) {
  return [&config, &w, sequences, n, on = std::move(on)](const ConstMatRef& x_q, const AttentionTrace& a,
                                                         const Mat& d_out, AttentionWeights& ga, Mat& d_x_q) {
    Mat d_kv;
    attention_sublayer_backward(config, w, x_q, x_q, uniform_layout(sequences, n, n, a.keys, a.values), on, a, d_out,
                                ga, d_x_q, d_kv);
    d_x_q += d_kv;
  };
}

std::vector<int> ids_of(const std::vector<int>& ids, Eigen::Index begin, Eigen::Index count) {
  return std::vector<int>(ids.begin() + begin, ids.begin() + begin + count);
}

}  // namespace

// [SECTION] the encoder pass

void encoder_pass(const Config& config, const ModelWeights& weights, int sequences, int first_layer, Record record,
                  Dropout* dropout, Trace& trace) {
  const Interventions& iv = trace.interventions;
  const int L = config.n_encoder_layers;
  const Eigen::Index R = static_cast<Eigen::Index>(trace.src.ids.size());
  if (sequences < 1 || R % sequences != 0)
    fail(ErrorKind::Shape, "encoder_pass", std::to_string(R) + " source rows are not " + std::to_string(sequences) +
                                               " sequences of one length");
  const Eigen::Index S = R / sequences;
  // Record::Output keeps only what the next layer reads, as the decoder's pass does: every layer runs in one
  // scratch record, whose buffers the next layer finds in cache, and trace.encoder is left empty. (Three
  // layers' records of a 128-token sentence are about 6 MB, beyond L2 and crowding the weights out of L3.)
  const bool output_only = record == Record::Output;
  EncoderLayerTrace scratch;
  Mat x_out;  // output_only: the input of the layer to run, then its output
  if (output_only && first_layer > 0 && trace.encoder.size() >= static_cast<size_t>(first_layer))
    x_out = trace.encoder[static_cast<size_t>(first_layer - 1)].out;
  if (output_only) trace.encoder.clear();
  else trace.encoder.resize(static_cast<size_t>(L));
  if (first_layer < 0) {
    std::vector<int> positions(static_cast<size_t>(R));
    for (Eigen::Index r = 0; r < R; ++r) positions[static_cast<size_t>(r)] = static_cast<int>(r % S);
    embed_rows(config, weights, true, trace.src.ids, positions, iv.positional_encoding, dropout, trace.src);
    first_layer = 0;
  }
  for (int l = first_layer; l < L; ++l) {
    const EncoderLayerWeights& w = weights.encoder_layers[static_cast<size_t>(l)];
    const Mat& x = l == 0 ? trace.src.sum : output_only ? x_out : trace.encoder[static_cast<size_t>(l - 1)].out;
    EncoderLayerTrace& layer = output_only ? scratch : trace.encoder[static_cast<size_t>(l)];
    const std::vector<bool> on = heads_on(config, iv, AttentionKind::Encoder, l);
    AttentionFn self_attn = [&](const ConstMatRef& x_q, AttentionTrace& t) {
      std::vector<SequenceAttention> seqs = uniform_layout(sequences, S, S, t.keys, t.values);
      for (int b = 0; b < sequences; ++b) {
        const std::vector<int> ids = ids_of(trace.src.ids, b * S, S);
        seqs[static_cast<size_t>(b)].mask = build_mask(config, iv, AttentionKind::Encoder, l, 0, S, ids, false, &ids);
      }
      attention_sublayer(config, w.self_attn, x_q, seqs, on, record, dropout, t);
    };
    encoder_layer_forward(config, w, x, self_attn, dropout, layer);
    if (output_only) x_out = std::move(layer.out);
  }
  final_norm_forward(config, config.encoder_final_norm, weights.encoder_norm,
                     output_only ? x_out : trace.encoder.back().out, trace.encoder_norm, trace.enc_out);
  if (config.has_decoder()) {
    trace.head = OutputHeadTrace{};  // (the masked-LM head is an encoder-only model's)
    return;
  }
  // An encoder-only model's output head: every token's scores over the vocabulary, logits (B*S, V) (masked_lm:
  // through BERT's transform, recorded in trace.head).
  output_head_forward(config, weights, trace.enc_out, trace.head, trace.logits);
  if (record == Record::Trace) masked_softmax(trace.logits, Mat(), trace.probs);
  else trace.probs.resize(0, 0);
}

// [SECTION] the decoder pass

Mat decoder_pass(const Config& config, const ModelWeights& weights, const Trace& encoded,
                 const CrossKeysValues* cross, DecoderPass& pass) {
  const char* where = "decoder_pass";
  const DecoderRows& rows = pass.rows;
  const int R = rows.size(), L = config.n_decoder_layers;
  if (!config.has_decoder()) fail(ErrorKind::Input, where, "an encoder_only model has no decoder");
  // A decoder-only model's `encoded` is an empty trace (no source, its interventions); cross-attention is skipped.
  if (config.has_cross_attention() && !encoded.has_encoder())
    fail(ErrorKind::Input, where, "the trace holds no encoder pass");
  if ((pass.record != Record::Output) != (pass.trace != nullptr))
    fail(ErrorKind::Input, where, "a trace is given exactly when the pass records one");
  DecoderPlanRequest request(rows, encoded.src.ids, encoded.sequences, encoded.interventions);
  request.output_rows = pass.output_rows;
  request.record = pass.record;
  request.first_layer = pass.first_layer;
  request.source_of = pass.source_of;
  for (const KvCache* c : pass.caches) request.cached_tokens.push_back(c ? &c->tokens : nullptr);
  const DecoderPlan plan = plan_decoder_pass(config, request);
  // What the plan cannot see: the caches' and cross-attention's matrices, the trace a later layer starts from.
  for (const KvCache* c : pass.caches) {
    if (static_cast<int>(c->keys.size()) != L || static_cast<int>(c->values.size()) != L)
      fail(ErrorKind::Input, where, "the KV cache is not this model's");
    for (size_t l = 0; l < c->keys.size(); ++l)
      if (c->keys[l].rows() < c->length() || c->values[l].rows() < c->length() ||
          (c->length() > 0 && (c->keys[l].cols() != config.d_model || c->values[l].cols() != config.d_model)))
        fail(ErrorKind::Input, where, "the KV cache's keys do not cover the " + std::to_string(c->length()) +
                                          " tokens it holds (a cache of tokens only is no KV cache)");
  }
  const Eigen::Index S = plan.source_length;
  if (!config.has_cross_attention()) {  // a decoder-only model: no keys, or the empty ones cross_keys_values gives
    if (cross && !cross->keys.empty()) fail(ErrorKind::Input, where, "a decoder_only model has no cross-attention");
    cross = nullptr;
  }
  if (cross && (static_cast<int>(cross->keys.size()) != L || cross->keys.front().rows() != S))
    fail(ErrorKind::Input, where, "the cross-attention keys are not this encoder pass's");
  const bool recorded = pass.record != Record::Output;
  if (pass.first_layer >= 0 && (!recorded || static_cast<int>(pass.trace->decoder.size()) != L ||
                               pass.trace->tgt.ids != rows.tokens))
    fail(ErrorKind::Input, where, "a pass from layer " + std::to_string(pass.first_layer) +
                                      " needs the trace of this very pass up to it");
  const size_t n = plan.sequences.size();
  const bool cached = !pass.caches.empty();  // sequence s continues pass.caches[s]

  // Embeddings (the ids and positions are checked here, before anything is written).
  EmbeddingTrace own_embedding;
  EmbeddingTrace& emb = recorded ? pass.trace->tgt : own_embedding;
  const Interventions& iv = encoded.interventions;
  if (pass.first_layer < 0)
    embed_rows(config, weights, false, rows.tokens, rows.positions, iv.positional_encoding, pass.dropout, emb);
  const int first_layer = std::max(pass.first_layer, 0);
  if (recorded) {
    pass.trace->decoder.resize(static_cast<size_t>(L));
    if (n == 1) pass.trace->interventions = plan.sequences.front().fitted;
  }

  Mat x;  // (R, C), in the last layer of an unrecorded pass (output rows, C)
  DecoderLayerTrace scratch;
  for (int l = first_layer; l < L; ++l) {
    const DecoderLayerWeights& w = weights.decoder_layers[static_cast<size_t>(l)];
    DecoderLayerTrace& t = recorded ? pass.trace->decoder[static_cast<size_t>(l)] : scratch;
    const Mat& input = l == 0 ? emb.sum : recorded ? pass.trace->decoder[static_cast<size_t>(l - 1)].out : x;
    const std::vector<bool> self_on = heads_on(config, iv, AttentionKind::Decoder, l);
    const std::vector<bool> cross_on = heads_on(config, iv, AttentionKind::Cross, l);
    // Sequence s's job in this layer's attention: its queries and masks from the plan, its keys and values given.
    auto job = [&](size_t s, bool self, const Mat* keys, const Mat* values, Eigen::Index k_begin,
                   Eigen::Index k_rows) {
      const DecoderPlan::Queries q = plan.queries(s, l);
      return SequenceAttention{q.begin, q.count, keys, values, k_begin, k_rows,
                               self ? plan.self_mask(config, s, l) : plan.cross_mask(config, s, l)};
    };
    AttentionFn self_attn = [&](const ConstMatRef& x_q, AttentionTrace& a) {
      std::vector<SequenceAttention> jobs;
      jobs.reserve(n);
      for (size_t s = 0; s < n; ++s) {
        const DecoderPlan::Sequence& q = plan.sequences[s];
        if (cached) {  // the sequence's rows join its cache; its keys are the cache's
          KvCache& c = *pass.caches[s];
          append_rows(c.keys[static_cast<size_t>(l)], q.first_position, a.keys.middleRows(q.begin, q.count));
          append_rows(c.values[static_cast<size_t>(l)], q.first_position, a.values.middleRows(q.begin, q.count));
          jobs.push_back(job(s, true, &c.keys[static_cast<size_t>(l)], &c.values[static_cast<size_t>(l)], 0,
                             q.first_position + q.count));
        } else {
          jobs.push_back(job(s, true, &a.keys, &a.values, q.begin, q.count));
        }
      }
      attention_sublayer(config, w.self_attn, x_q, jobs, self_on, pass.record, pass.dropout, a);
    };
    AttentionFn cross_attn = [&](const ConstMatRef& x_q, AttentionTrace& a) {
      // The encoder's keys and values: read where they are (decoding steps), copied into a record, or computed
      // here (training, whose gradient flows into them).
      const Mat* keys = &a.keys;
      const Mat* values = &a.values;
      if (cross && (!recorded || pass.record == Record::Rows)) {
        keys = &cross->keys[static_cast<size_t>(l)];
        values = &cross->values[static_cast<size_t>(l)];
      } else if (cross) {
        a.keys = cross->keys[static_cast<size_t>(l)];
        a.values = cross->values[static_cast<size_t>(l)];
      } else {
        attention_projection(config, encoded.enc_out, w.cross_attn.k, a.keys);    // (B*S, C)
        attention_projection(config, encoded.enc_out, w.cross_attn.v, a.values);  // (B*S, C)
      }
      std::vector<SequenceAttention> jobs;
      jobs.reserve(n);
      for (size_t s = 0; s < n; ++s) jobs.push_back(job(s, false, keys, values, plan.sequences[s].source * S, S));
      attention_sublayer(config, w.cross_attn, x_q, jobs, cross_on, pass.record, pass.dropout, a);
    };
    decoder_layer_forward(config, w, input, plan.fewer_queries_in(l) ? &plan.output_rows : nullptr, self_attn,
                          cross_attn, pass.dropout, t);
    if (!recorded) x = std::move(t.out);
  }
  for (size_t s = 0; s < n && cached; ++s) {
    const DecoderPlan::Sequence& q = plan.sequences[s];
    std::vector<int>& tokens = pass.caches[s]->tokens;
    tokens.insert(tokens.end(), rows.tokens.begin() + q.begin, rows.tokens.begin() + q.begin + q.count);
  }
  if (!recorded) {
    LayerNormTrace norm;
    Mat out;
    final_norm_forward(config, config.decoder_final_norm, weights.decoder_norm, x, norm, out);
    Mat logits;
    output_logits(weights, plan.fewer_queries ? out : select_rows(out, pass.output_rows), logits);  // (outputs, Vt)
    return logits;
  }
  Trace& trace = *pass.trace;
  final_norm_forward(config, config.decoder_final_norm, weights.decoder_norm, trace.decoder.back().out,
                     trace.decoder_norm, trace.dec_out);
  if (static_cast<int>(pass.output_rows.size()) == R) {
    output_logits(weights, trace.dec_out, trace.logits);  // (R, Vt)
    if (pass.record == Record::Trace) masked_softmax(trace.logits, Mat(), trace.probs);
    else trace.probs.resize(0, 0);
  } else {  // the rest is computed as it is read (output_rows in forward.h): the rows asked for, as one product
    trace.logits.resize(R, weights.generator.weight.rows());
    trace.probs.resize(0, 0);
    Mat rows_logits;  // (outputs, Vt)
    output_logits(weights, select_rows(trace.dec_out, pass.output_rows), rows_logits);
    for (size_t i = 0; i < pass.output_rows.size(); ++i)
      trace.logits.row(pass.output_rows[i]) = rows_logits.row(static_cast<Eigen::Index>(i));
  }
  return Mat();
}

// [SECTION] a traced pass assembled from recorded rows

namespace {

// Rows [begin, end) of `of(piece)` of each piece, stacked: (rows, cols).
template <typename Of>
Mat stack_rows(const std::vector<RecordedRows>& pieces, Eigen::Index rows, const Of& of) {
  const Mat& first = of(*pieces.front().pass);
  Mat out(rows, first.cols());
  Eigen::Index at = 0;
  for (const RecordedRows& p : pieces) {
    const Mat& m = of(*p.pass);
    if (m.cols() != out.cols() || m.rows() < p.end)
      fail(ErrorKind::Shape, "assemble_traced_pass", "a recorded chunk lacks rows of a tensor the trace needs");
    out.middleRows(at, p.end - p.begin) = m.middleRows(p.begin, p.end - p.begin);
    at += p.end - p.begin;
  }
  return out;
}
template <typename Of>
Vec stack_entries(const std::vector<RecordedRows>& pieces, Eigen::Index rows, const Of& of) {
  Vec out(rows);
  Eigen::Index at = 0;
  for (const RecordedRows& p : pieces) {
    const Vec& v = of(*p.pass);
    if (v.size() < p.end) fail(ErrorKind::Shape, "assemble_traced_pass", "a recorded chunk lacks a layer norm's rows");
    out.segment(at, p.end - p.begin) = v.segment(p.begin, p.end - p.begin);
    at += p.end - p.begin;
  }
  return out;
}

}  // namespace

Trace assemble_traced_pass(const Config& config, const Trace& encoded, const CrossKeysValues& cross,
                           const std::vector<RecordedRows>& pieces) {
  const char* where = "assemble_traced_pass";
  if (pieces.empty()) fail(ErrorKind::Input, where, "no recorded rows");
  const bool with_cross = config.has_cross_attention();
  if ((with_cross && !encoded.has_encoder()) || encoded.sequences != 1)
    fail(ErrorKind::Input, where, "one sentence's encoder pass is needed");
  const int L = config.n_decoder_layers;
  Eigen::Index T = 0;
  std::vector<int> ids;
  for (const RecordedRows& p : pieces) {
    const Trace& t = *p.pass;
    if (p.first_position + p.begin != T || p.begin < 0 || p.end <= p.begin ||
        p.end > static_cast<int>(t.tgt.ids.size()) || static_cast<int>(t.decoder.size()) != L ||
        t.logits.rows() < p.end)
      fail(ErrorKind::Input, where, "the recorded rows do not follow each other from position 0");
    ids.insert(ids.end(), t.tgt.ids.begin() + p.begin, t.tgt.ids.begin() + p.end);
    T += p.end - p.begin;
  }
  // What a traced pass over these tokens is: its masks, its interventions fitted to T (transformer/decoder_plan.h).
  const DecoderRows rows = DecoderRows::one_sequence(ids);
  DecoderPlanRequest request(rows, encoded.src.ids, 1, encoded.interventions);
  request.record = Record::Trace;
  const DecoderPlan plan = plan_decoder_pass(config, request);
  const Interventions& fitted = plan.sequences.front().fitted;
  const Eigen::Index S = plan.source_length;
  Trace trace;
  trace.interventions = fitted;
  trace.tgt.ids = ids;
  trace.decoder.resize(static_cast<size_t>(L));
  // Every row's own tensors, stacked from the pieces: some fifty copies, shared out on the pool (a long sentence's
  // are megabytes each); then what mixes the rows, computed again layer by layer.
  std::vector<std::function<void()>> copies;
  auto rows_of = [&](Mat& out, auto of) {
    copies.push_back([&out, of, &pieces, T] { out = stack_rows(pieces, T, of); });
  };
  auto norm_of = [&](LayerNormTrace& out, auto of) {
    copies.push_back([&out, of, &pieces, T] {
      out.out = stack_rows(pieces, T, [&](const Trace& t) -> const Mat& { return of(t).out; });
      out.mean = stack_entries(pieces, T, [&](const Trace& t) -> const Vec& { return of(t).mean; });
      out.std = stack_entries(pieces, T, [&](const Trace& t) -> const Vec& { return of(t).std; });
    });
  };
  rows_of(trace.tgt.tok_embed, [](const Trace& t) -> const Mat& { return t.tgt.tok_embed; });
  rows_of(trace.tgt.pos, [](const Trace& t) -> const Mat& { return t.tgt.pos; });
  rows_of(trace.tgt.sum, [](const Trace& t) -> const Mat& { return t.tgt.sum; });
  for (size_t li = 0; li < static_cast<size_t>(L); ++li) {
    DecoderLayerTrace& d = trace.decoder[li];
    // Row by row, as the chunks computed them.
    rows_of(d.self_attn.queries, [li](const Trace& t) -> const Mat& { return t.decoder[li].self_attn.queries; });
    rows_of(d.self_attn.keys, [li](const Trace& t) -> const Mat& { return t.decoder[li].self_attn.keys; });
    rows_of(d.self_attn.values, [li](const Trace& t) -> const Mat& { return t.decoder[li].self_attn.values; });
    rows_of(d.self_attn.attn_out, [li](const Trace& t) -> const Mat& { return t.decoder[li].self_attn.attn_out; });
    rows_of(d.residual1, [li](const Trace& t) -> const Mat& { return t.decoder[li].residual1; });
    norm_of(d.norm1, [li](const Trace& t) -> const LayerNormTrace& { return t.decoder[li].norm1; });
    if (with_cross) {
      rows_of(d.cross_attn.queries, [li](const Trace& t) -> const Mat& { return t.decoder[li].cross_attn.queries; });
      rows_of(d.cross_attn.attn_out, [li](const Trace& t) -> const Mat& { return t.decoder[li].cross_attn.attn_out; });
      rows_of(d.residual2, [li](const Trace& t) -> const Mat& { return t.decoder[li].residual2; });
      norm_of(d.norm2, [li](const Trace& t) -> const LayerNormTrace& { return t.decoder[li].norm2; });
    }
    rows_of(d.ffn.hidden_pre, [li](const Trace& t) -> const Mat& { return t.decoder[li].ffn.hidden_pre; });
    rows_of(d.ffn.hidden, [li](const Trace& t) -> const Mat& { return t.decoder[li].ffn.hidden; });
    rows_of(d.ffn.out, [li](const Trace& t) -> const Mat& { return t.decoder[li].ffn.out; });
    rows_of(d.residual3, [li](const Trace& t) -> const Mat& { return t.decoder[li].residual3; });
    norm_of(d.norm3, [li](const Trace& t) -> const LayerNormTrace& { return t.decoder[li].norm3; });
    rows_of(d.out, [li](const Trace& t) -> const Mat& { return t.decoder[li].out; });
  }
  if (config.decoder_final_norm)
    norm_of(trace.decoder_norm, [](const Trace& t) -> const LayerNormTrace& { return t.decoder_norm; });
  rows_of(trace.dec_out, [](const Trace& t) -> const Mat& { return t.dec_out; });
  rows_of(trace.logits, [](const Trace& t) -> const Mat& { return t.logits; });
  parallel_for(static_cast<int>(copies.size()), 1, [&](int begin, int end) {
    for (int i = begin; i < end; ++i) copies[static_cast<size_t>(i)]();
  });
  for (int l = 0; l < L; ++l) {
    DecoderLayerTrace& d = trace.decoder[static_cast<size_t>(l)];
    // What mixes the rows, over the whole sequence as a traced pass computes it: the self-attention over every
    // row's keys and values under the full pass's masks, the cross-attention over the encoder's.
    std::vector<SequenceAttention> self(1);
    self[0] = {0, T, &d.self_attn.keys, &d.self_attn.values, 0, T, plan.self_mask(config, 0, l)};
    attend_sequences(config, self, heads_on(config, fitted, AttentionKind::Decoder, l), Record::Trace, nullptr,
                     d.self_attn);
    if (!with_cross) continue;
    d.cross_attn.keys = cross.keys[static_cast<size_t>(l)];
    d.cross_attn.values = cross.values[static_cast<size_t>(l)];
    std::vector<SequenceAttention> across(1);
    across[0] = {0, T, &d.cross_attn.keys, &d.cross_attn.values, 0, S, plan.cross_mask(config, 0, l)};
    attend_sequences(config, across, heads_on(config, fitted, AttentionKind::Cross, l), Record::Trace, nullptr,
                     d.cross_attn);
  }
  masked_softmax(trace.logits, Mat(), trace.probs);
  return trace;
}

// [SECTION] backward of a training pass

void model_backward(const Config& config, const ModelWeights& w, int sequences, const Trace& trace,
                    const Mat& d_logits, ModelWeights& g, Mat* d_source_input, Mat* d_target_input) {
  const Eigen::Index B = sequences, S = static_cast<Eigen::Index>(trace.src.ids.size()) / B,
                     T = static_cast<Eigen::Index>(trace.tgt.ids.size()) / B;
  const Interventions& iv = trace.interventions;
  auto positions = [](Eigen::Index rows, Eigen::Index length) {
    std::vector<int> p(static_cast<size_t>(rows));
    for (Eigen::Index r = 0; r < rows; ++r) p[static_cast<size_t>(r)] = static_cast<int>(r % length);
    return p;
  };

  // The output head, over the last stack's output: the decoder's, or an encoder-only model's encoder's.
  Mat d;  // dL/d(the last stack's activations) (B*T, C)
  if (!config.has_decoder() && config.output_head == OutputHead::MaskedLM) {
    // BERT's masked-LM head: logits = LN(act(enc_out W_d^T + b_d)) W^T + b (output_head_forward), backwards.
    const OutputHeadTrace& h = trace.head;
    Mat d_norm, d_act;  // (B*S, C)
    linear_backward(h.norm.out, w.generator, d_logits, g.generator, &d_norm);
    layer_norm_backward(h.act, h.norm, w.head_norm, d_norm, g.head_norm, d_act);
    activation_backward(config.activation, h.dense, d_act);  // now dL/d(dense)
    linear_backward(trace.enc_out, w.head_transform, d_act, g.head_transform, &d);
  } else {
    // Rows of d_logits that are all zero (no loss reads them: padding, an attribution's other rows) add nothing:
    // the output head's backward runs over the others alone, d is 0 on those rows.
    const Mat& out = config.has_decoder() ? trace.dec_out : trace.enc_out;
    std::vector<int> live;
    for (Eigen::Index r = 0; r < d_logits.rows(); ++r)
      if (!d_logits.row(r).isZero(0)) live.push_back(static_cast<int>(r));
    if (static_cast<Eigen::Index>(live.size()) == d_logits.rows()) {
      linear_backward(out, w.generator, d_logits, g.generator, &d);
    } else {
      Mat d_live;  // (live, C)
      linear_backward(select_rows(out, live), w.generator, select_rows(d_logits, live), g.generator, &d_live);
      d = Mat::Zero(out.rows(), out.cols());
      for (size_t i = 0; i < live.size(); ++i) d.row(live[i]) = d_live.row(static_cast<Eigen::Index>(i));
    }
  }
  Mat d_encoder_out = Mat::Zero(trace.enc_out.rows(), trace.enc_out.cols());  // (B*S, C)
  if (!config.has_decoder()) d_encoder_out = std::move(d);

  // Decoder, from the logits down.
  if (config.has_decoder() && config.decoder_final_norm) {
    Mat dn;
    layer_norm_backward(trace.decoder.back().out, trace.decoder_norm, w.decoder_norm, d, g.decoder_norm, dn);
    d = std::move(dn);
  }
  for (int l = config.n_decoder_layers - 1; l >= 0; --l) {
    const DecoderLayerTrace& t = trace.decoder[static_cast<size_t>(l)];
    const Mat& x = l == 0 ? trace.tgt.sum : trace.decoder[static_cast<size_t>(l - 1)].out;
    const AttentionBackwardFn self_attn = self_attention_backward(
        config, w.decoder_layers[static_cast<size_t>(l)].self_attn, sequences, T,
        heads_on(config, iv, AttentionKind::Decoder, l));
    AttentionBackwardFn cross_attn = [&](const ConstMatRef& x_q, const AttentionTrace& a, const Mat& d_out,
                                         AttentionWeights& ga, Mat& d_x_q) {
      Mat d_kv;
      attention_sublayer_backward(config, w.decoder_layers[static_cast<size_t>(l)].cross_attn, x_q, trace.enc_out,
                                  uniform_layout(sequences, T, S, a.keys, a.values),
                                  heads_on(config, iv, AttentionKind::Cross, l), a, d_out, ga, d_x_q, d_kv);
      d_encoder_out += d_kv;
    };
    Mat dx;
    decoder_layer_backward(config, w.decoder_layers[static_cast<size_t>(l)], x, t, self_attn, cross_attn,
                           std::move(d), g.decoder_layers[static_cast<size_t>(l)], dx);
    d = std::move(dx);
  }
  if (config.has_decoder()) {
    embed_rows_backward(config, w, false, trace.tgt, positions(B * T, T), iv.positional_encoding, std::move(d), g,
                        d_target_input);
  }
  if (!config.has_encoder()) return;

  // Encoder, from its output down.
  d = std::move(d_encoder_out);
  if (config.encoder_final_norm) {
    Mat dn;
    layer_norm_backward(trace.encoder.back().out, trace.encoder_norm, w.encoder_norm, d, g.encoder_norm, dn);
    d = std::move(dn);
  }
  for (int l = config.n_encoder_layers - 1; l >= 0; --l) {
    const EncoderLayerTrace& t = trace.encoder[static_cast<size_t>(l)];
    const Mat& x = l == 0 ? trace.src.sum : trace.encoder[static_cast<size_t>(l - 1)].out;
    const AttentionBackwardFn self_attn = self_attention_backward(
        config, w.encoder_layers[static_cast<size_t>(l)].self_attn, sequences, S,
        heads_on(config, iv, AttentionKind::Encoder, l));
    Mat dx;
    encoder_layer_backward(config, w.encoder_layers[static_cast<size_t>(l)], x, t, self_attn, std::move(d),
                           g.encoder_layers[static_cast<size_t>(l)], dx);
    d = std::move(dx);
  }
  embed_rows_backward(config, w, true, trace.src, positions(B * S, S), iv.positional_encoding, std::move(d), g,
                      d_source_input);
}

}  // namespace sf
