#include "explain/attribution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "nn/embedding.h"
#include "train/parameters.h"  // empty_gradients
#include "transformer/forward.h"
#include "transformer/layers.h"  // heads_on
#include "transformer/passes.h"
#include "util/error.h"

namespace sf {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// a_i = sum_c x_ic * g_ic for each row i of x (N, C), in double.
std::vector<float> row_dots(const ConstMatRef& x, const ConstMatRef& g) {
  std::vector<float> out(static_cast<size_t>(x.rows()));
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    out[static_cast<size_t>(i)] =
        static_cast<float>((x.row(i).cast<double>().array() * g.row(i).cast<double>().array()).sum());
  return out;
}

// df/dz of f = ln softmax(z)_token at one row, written into d_logits' row when `gradient`: [j = token] - p_j.
// Returns f.
double log_probability(const ConstMatRef& logits, Eigen::Index row, int token, Mat* d_logits) {
  const auto z = logits.row(row);
  const double m = z.maxCoeff();
  double sum = 0;
  for (Eigen::Index j = 0; j < z.size(); ++j) sum += std::exp(static_cast<double>(z(j)) - m);
  if (d_logits) {
    for (Eigen::Index j = 0; j < z.size(); ++j)
      (*d_logits)(row, j) = static_cast<float>(-std::exp(static_cast<double>(z(j)) - m) / sum);
    (*d_logits)(row, token) += 1.0f;
  }
  return static_cast<double>(z(token)) - m - std::log(sum);
}

void check_row_and_token(int rows, int vocabulary, int row, int token) {
  if (row < 0 || row >= rows)
    fail(ErrorKind::Input, "attribution", "row " + std::to_string(row) + " of a pass of " + std::to_string(rows) +
                                              " rows");
  if (token < 0 || token >= vocabulary)
    fail(ErrorKind::Input, "attribution", "token " + std::to_string(token) + " outside the vocabulary of " +
                                              std::to_string(vocabulary));
}

// The rows of output a pass has: the decoder's inputs, or an encoder-only model's tokens.
int output_rows(const Config& config, const std::vector<int>& source, const std::vector<int>& target) {
  return static_cast<int>(config.has_decoder() ? target.size() : source.size());
}

// x: the token embeddings as the model uses them, (N, C) = E[id] * scale (nn/embedding.h).
Mat token_embeddings(const Config& config, const ModelWeights& weights, bool source, const std::vector<int>& ids) {
  const float scale =
      config.embedding_scale == EmbeddingScale::SqrtDModel ? std::sqrt(static_cast<float>(config.d_model)) : 1.0f;
  Mat x;
  embedding_forward(ids, source ? weights.src_embedding : weights.tgt_embedding, scale, x);
  return x;
}

// One copy of the sentence in a batched pass: its token embeddings scaled by `scale`, f read at `row` for
// `token`, and the gradient of f sent back from it when `gradient` (else it only reports f).
struct Copy {
  float scale = 1;
  int row = 0, token = 0;
  bool gradient = true;
};
struct CopyGradients {
  Mat d_source, d_target;  // (B*S, C), (B*T, C): df/d(tok_embed) of each copy (its own f only)
  std::vector<double> f;   // (B)
};

// The copies as one batch through the training pass (Record::Backward) and the core's backward. Each copy's
// gradient is that of its own f: the copies share no row, so one backward of sum_b f_b gives every copy's.
CopyGradients run_copies(const Config& config, const ModelWeights& weights, const std::vector<int>& source,
                         const std::vector<int>& target, const Interventions& interventions,
                         const std::vector<Copy>& copies) {
  if (config.attention != AttentionStyle::SplitHeads)
    fail(ErrorKind::Unsupported, "attribution",
         "gradient attributions need the backward pass, which has no reshape_heads attention (the from-scratch "
         "family's): attention rollout reads the attention maps alone and works for it");
  const int B = static_cast<int>(copies.size());
  const int rows = output_rows(config, source, target);
  auto repeated = [B](const std::vector<int>& ids) {
    std::vector<int> out;
    out.reserve(ids.size() * static_cast<size_t>(B));
    for (int b = 0; b < B; ++b) out.insert(out.end(), ids.begin(), ids.end());
    return out;
  };
  auto scales = [&copies](size_t length) {
    std::vector<float> out;
    out.reserve(length * copies.size());
    for (const Copy& c : copies) out.insert(out.end(), length, c.scale);
    return out;
  };
  Trace t;
  t.sequences = B;
  t.interventions = interventions;
  if (config.has_encoder()) {
    t.src.ids = repeated(source);
    t.src.token_scale = scales(source.size());
    encoder_pass(config, weights, B, -1, Record::Backward, nullptr, t);  // encoder-only: its logits too
  }
  if (config.has_decoder()) {
    DecoderPass pass;
    for (int b = 0; b < B; ++b) {
      pass.rows.add_sequence(target);
      if (config.has_cross_attention()) pass.source_of.push_back(b);
    }
    // (the logits of each copy's scored row alone: the only ones read)
    for (int b = 0; b < B; ++b) pass.output_rows.push_back(b * rows + copies[static_cast<size_t>(b)].row);
    pass.record = Record::Backward;
    pass.trace = &t;
    t.tgt.token_scale = scales(target.size());
    decoder_pass(config, weights, t, nullptr, pass);
  }
  CopyGradients out;
  out.f.resize(static_cast<size_t>(B));
  Mat d_logits = Mat::Zero(t.logits.rows(), t.logits.cols());
  bool any = false;
  for (int b = 0; b < B; ++b) {
    const Copy& c = copies[static_cast<size_t>(b)];
    out.f[static_cast<size_t>(b)] = log_probability(t.logits, static_cast<Eigen::Index>(b) * rows + c.row, c.token,
                                                    c.gradient ? &d_logits : nullptr);
    any = any || c.gradient;
  }
  if (!any) return out;
  ModelWeights grads = empty_gradients(weights);  // (the inputs' gradients alone: no weight's is computed)
  model_backward(config, weights, B, t, d_logits, grads, config.has_encoder() ? &out.d_source : nullptr,
                 config.has_decoder() ? &out.d_target : nullptr);
  return out;
}

// How many copies of a sentence of `length` tokens fit in one batch.
int copies_per_batch(const std::vector<int>& source, const std::vector<int>& target) {
  const int length = static_cast<int>(source.size() + target.size());
  return std::max(1, kAttributionBatchRows / std::max(length, 1));
}

// Integrated gradients of one row, its N + 1 copies in batches: (source, target) attributions, f, f(0).
TokenAttribution integrate_row(const Config& config, const ModelWeights& weights, const std::vector<int>& source,
                               const std::vector<int>& target, const Interventions& interventions, int row, int token,
                               int steps, const Mat& x_source, const Mat& x_target) {
  const Eigen::Index S = static_cast<Eigen::Index>(source.size()), T = static_cast<Eigen::Index>(target.size());
  Mat sum_source = Mat::Zero(config.has_encoder() ? S : 0, config.d_model);  // sum_k df/dx (k/N x)
  Mat sum_target = Mat::Zero(config.has_decoder() ? T : 0, config.d_model);
  TokenAttribution out;
  const int per_batch = copies_per_batch(source, target);
  for (int first = 0; first <= steps; first += per_batch) {  // copy k = 0 (the baseline) .. N
    std::vector<Copy> copies;
    for (int k = first; k <= steps && k < first + per_batch; ++k)
      copies.push_back({static_cast<float>(k) / static_cast<float>(steps), row, token, k > 0});
    const CopyGradients g = run_copies(config, weights, source, target, interventions, copies);
    for (size_t i = 0; i < copies.size(); ++i) {
      const int k = first + static_cast<int>(i);
      if (k == 0) out.f_baseline = g.f[i];
      if (k == steps) out.f = g.f[i];
      if (k == 0) continue;
      if (S > 0 && config.has_encoder()) sum_source += g.d_source.middleRows(static_cast<Eigen::Index>(i) * S, S);
      if (T > 0 && config.has_decoder()) sum_target += g.d_target.middleRows(static_cast<Eigen::Index>(i) * T, T);
    }
  }
  // a_i = x_i . (1/N) sum_k g_k,i
  if (config.has_encoder()) out.source = row_dots(x_source, sum_source / static_cast<float>(steps));
  if (config.has_decoder()) out.target = row_dots(x_target, sum_target / static_cast<float>(steps));
  return out;
}

void check_steps(int steps) {
  if (steps < 1 || steps > kMaxIntegratedGradientSteps)
    fail(ErrorKind::Input, "attribution", "integrated gradients take 1 to " +
                                              std::to_string(kMaxIntegratedGradientSteps) + " steps, not " +
                                              std::to_string(steps));
}

}  // namespace

TokenAttribution gradient_x_input(const Config& config, const ModelWeights& weights, const std::vector<int>& source,
                                  const std::vector<int>& target, const Interventions& interventions, int row,
                                  int token) {
  check_row_and_token(output_rows(config, source, target), config.output_vocab_size(), row, token);
  const CopyGradients g = run_copies(config, weights, source, target, interventions, {Copy{1.0f, row, token, true}});
  TokenAttribution out;
  out.f = g.f[0];
  out.f_baseline = kNaN;
  if (config.has_encoder()) out.source = row_dots(token_embeddings(config, weights, true, source), g.d_source);
  if (config.has_decoder()) out.target = row_dots(token_embeddings(config, weights, false, target), g.d_target);
  return out;
}

TokenAttribution integrated_gradients(const Config& config, const ModelWeights& weights,
                                      const std::vector<int>& source, const std::vector<int>& target,
                                      const Interventions& interventions, int row, int token, int steps) {
  check_steps(steps);
  check_row_and_token(output_rows(config, source, target), config.output_vocab_size(), row, token);
  const Mat x_source = config.has_encoder() ? token_embeddings(config, weights, true, source) : Mat();
  const Mat x_target = config.has_decoder() ? token_embeddings(config, weights, false, target) : Mat();
  return integrate_row(config, weights, source, target, interventions, row, token, steps, x_source, x_target);
}

const char* to_string(AttributionMethod method) {
  switch (method) {
    case AttributionMethod::GradientXInput: return "gxi";
    case AttributionMethod::IntegratedGradients: return "ig";
    case AttributionMethod::Rollout: return "rollout";
  }
  return "?";
}

AttributionMethod parse_attribution_method(const std::string& text) {
  for (AttributionMethod m :
       {AttributionMethod::GradientXInput, AttributionMethod::IntegratedGradients, AttributionMethod::Rollout})
    if (text == to_string(m)) return m;
  fail(ErrorKind::Input, "attribution", "method \"" + text + "\": gxi (gradient x input), ig (integrated "
                                        "gradients) or rollout (attention rollout)");
}

AttributionMap attribute_rows(const Config& config, const ModelWeights& weights, const std::vector<int>& source,
                              const std::vector<int>& target, const Interventions& interventions,
                              const std::vector<int>& tokens, AttributionMethod method, int steps,
                              const std::atomic<bool>* cancelled) {
  const int rows = output_rows(config, source, target);
  if (static_cast<int>(tokens.size()) != rows)
    fail(ErrorKind::Input, "attribution", std::to_string(tokens.size()) + " tokens to score for a pass of " +
                                              std::to_string(rows) + " rows");
  for (int r = 0; r < rows; ++r)
    if (tokens[static_cast<size_t>(r)] >= 0) check_row_and_token(rows, config.output_vocab_size(), r, tokens[static_cast<size_t>(r)]);
  if (method == AttributionMethod::IntegratedGradients) check_steps(steps);
  const int S = config.has_encoder() ? static_cast<int>(source.size()) : 0;
  const int T = config.has_decoder() ? static_cast<int>(target.size()) : 0;
  AttributionMap out;
  out.method = method;
  out.source_length = S;
  out.target_length = T;
  out.values = Mat::Zero(rows, S + T);
  out.tokens = tokens;
  out.f.assign(static_cast<size_t>(rows), kNaN);
  out.f_baseline.assign(static_cast<size_t>(rows), kNaN);
  auto stop = [cancelled] { return cancelled && cancelled->load(); };
  auto put = [&](int r, const std::vector<float>& src, const std::vector<float>& tgt) {
    for (int j = 0; j < S; ++j) out.values(r, j) = src[static_cast<size_t>(j)];
    for (int j = 0; j < T; ++j) out.values(r, S + j) = tgt[static_cast<size_t>(j)];
  };

  if (method == AttributionMethod::Rollout) {
    const Trace trace = forward(config, weights, source, target, interventions);
    out.values = attention_rollout(config, trace);
    for (int r = 0; r < rows; ++r)
      if (tokens[static_cast<size_t>(r)] >= 0)
        out.f[static_cast<size_t>(r)] = log_probability(trace.logits, r, tokens[static_cast<size_t>(r)], nullptr);
      else
        out.values.row(r).setZero();
    return out;
  }
  const Mat x_source = S > 0 ? token_embeddings(config, weights, true, source) : Mat();
  const Mat x_target = T > 0 ? token_embeddings(config, weights, false, target) : Mat();
  if (method == AttributionMethod::IntegratedGradients) {
    for (int r = 0; r < rows; ++r) {
      if (stop()) {
        out.complete = false;
        return out;
      }
      const int token = tokens[static_cast<size_t>(r)];
      if (token < 0) continue;
      const TokenAttribution a =
          integrate_row(config, weights, source, target, interventions, r, token, steps, x_source, x_target);
      put(r, a.source, a.target);
      out.f[static_cast<size_t>(r)] = a.f;
      out.f_baseline[static_cast<size_t>(r)] = a.f_baseline;
    }
    return out;
  }
  // Gradient x input: one copy per scored row, as many to a batch as fit.
  std::vector<int> scored;
  for (int r = 0; r < rows; ++r)
    if (tokens[static_cast<size_t>(r)] >= 0) scored.push_back(r);
  const int per_batch = copies_per_batch(source, target);
  for (size_t first = 0; first < scored.size(); first += static_cast<size_t>(per_batch)) {
    if (stop()) {
      out.complete = false;
      return out;
    }
    std::vector<Copy> copies;
    for (size_t i = first; i < scored.size() && i < first + static_cast<size_t>(per_batch); ++i)
      copies.push_back({1.0f, scored[i], tokens[static_cast<size_t>(scored[i])], true});
    const CopyGradients g = run_copies(config, weights, source, target, interventions, copies);
    for (size_t i = 0; i < copies.size(); ++i) {
      const Eigen::Index b = static_cast<Eigen::Index>(i);
      const std::vector<float> src = S > 0 ? row_dots(x_source, g.d_source.middleRows(b * S, S)) : std::vector<float>();
      const std::vector<float> tgt = T > 0 ? row_dots(x_target, g.d_target.middleRows(b * T, T)) : std::vector<float>();
      put(copies[i].row, src, tgt);
      out.f[static_cast<size_t>(copies[i].row)] = g.f[i];
    }
  }
  return out;
}

// [SECTION] attention rollout

namespace {

// The mean of the heads that are on, (Tq, Tk); zero where every head is off.
Mat mean_of_heads_on(const std::vector<Mat>& probs, const std::vector<bool>& on, const char* what) {
  if (probs.empty() || probs.size() != on.size())
    fail(ErrorKind::Input, "attention_rollout", std::string("the trace holds no ") + what +
                                                    " attention maps of one sentence (a traced pass is needed)");
  Mat mean = Mat::Zero(probs.front().rows(), probs.front().cols());
  int n = 0;
  for (size_t h = 0; h < probs.size(); ++h)
    if (on[h]) mean += probs[h], ++n;
  if (n > 0) mean /= static_cast<float>(n);
  return mean;
}

// A~ = 0.5 A + 0.5 I, each row renormalised to sum 1 (a query row with every key masked: the identity alone).
Mat with_residual(const Mat& a) {
  Mat r = 0.5f * a;
  r.diagonal().array() += 0.5f;
  for (Eigen::Index i = 0; i < r.rows(); ++i) {
    const float s = r.row(i).sum();
    if (s > 0) r.row(i) /= s;
  }
  return r;
}

}  // namespace

Mat mean_attention(const Config& config, const Trace& trace, AttentionKind kind, int layer) {
  if (trace.sequences != 1) fail(ErrorKind::Input, "mean_attention", "the trace holds several sentences");
  const bool encoder = kind == AttentionKind::Encoder;
  const size_t layers = encoder ? trace.encoder.size() : trace.decoder.size();
  if (layer < 0 || static_cast<size_t>(layer) >= layers)
    fail(ErrorKind::Input, "mean_attention", "layer " + std::to_string(layer) + " of a trace of " +
                                                 std::to_string(layers) + " layers");
  const size_t l = static_cast<size_t>(layer);
  const AttentionTrace& a = encoder                       ? trace.encoder[l].self_attn
                            : kind == AttentionKind::Cross ? trace.decoder[l].cross_attn
                                                           : trace.decoder[l].self_attn;
  return mean_of_heads_on(a.probs, heads_on(config, trace.interventions, kind, layer),
                          encoder ? "encoder self-" : kind == AttentionKind::Cross ? "cross-" : "decoder self-");
}

Mat attention_rollout(const Config& config, const Trace& trace) {
  if (trace.sequences != 1) fail(ErrorKind::Input, "attention_rollout", "the trace holds several sentences");
  const Interventions& iv = trace.interventions;
  Mat encoder;  // R_enc (S, S)
  if (config.has_encoder()) {
    const Eigen::Index S = static_cast<Eigen::Index>(trace.src.ids.size());
    if (static_cast<int>(trace.encoder.size()) != config.n_encoder_layers)
      fail(ErrorKind::Input, "attention_rollout", "the trace holds no encoder layers");
    encoder = Mat::Identity(S, S);
    for (int l = 0; l < config.n_encoder_layers; ++l) {
      const Mat a = mean_of_heads_on(trace.encoder[static_cast<size_t>(l)].self_attn.probs,
                                     heads_on(config, iv, AttentionKind::Encoder, l), "encoder self-");
      encoder = with_residual(a) * encoder;
    }
    if (!config.has_decoder()) return encoder;
  }
  const Eigen::Index T = static_cast<Eigen::Index>(trace.tgt.ids.size()), S = encoder.rows();
  if (static_cast<int>(trace.decoder.size()) != config.n_decoder_layers)
    fail(ErrorKind::Input, "attention_rollout", "the trace holds no decoder layers");
  Mat D = Mat::Identity(T, T), X = Mat::Zero(T, S);
  for (int l = 0; l < config.n_decoder_layers; ++l) {
    const DecoderLayerTrace& layer = trace.decoder[static_cast<size_t>(l)];
    const Mat self = with_residual(mean_of_heads_on(layer.self_attn.probs,
                                                    heads_on(config, iv, AttentionKind::Decoder, l), "decoder self-"));
    D = self * D;
    X = self * X;
    if (!config.has_cross_attention()) continue;
    const Mat cross = mean_of_heads_on(layer.cross_attn.probs, heads_on(config, iv, AttentionKind::Cross, l), "cross-");
    const Mat brought = cross * encoder;  // (T, S)
    for (Eigen::Index i = 0; i < T; ++i) {
      const float s = cross.row(i).sum();
      if (s <= 0) continue;  // every source token masked for this row (or every head off): the residual alone
      X.row(i) = 0.5f * X.row(i) + 0.5f * brought.row(i) / s;
      D.row(i) *= 0.5f;
    }
  }
  Mat out(T, S + T);
  out << X, D;
  return out;
}

}  // namespace sf
