#include "explain/attribution.h"

#include <cmath>
#include <string>

#include "train/parameters.h"  // zeros_like
#include "transformer/forward.h"
#include "transformer/passes.h"
#include "util/error.h"

namespace sf {

namespace {

// a_i = sum_c x_ic * g_ic for each row i of x (N, C).
std::vector<float> row_dots(const Mat& x, const Mat& g) {
  std::vector<float> out(static_cast<size_t>(x.rows()));
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    out[static_cast<size_t>(i)] = static_cast<float>((x.row(i).cast<double>().array() * g.row(i).cast<double>().array()).sum());
  return out;
}

// df/dz of f = ln softmax(z)_token at one row: [j = token] - p_j; returns f.
double log_probability_gradient(const ConstMatRef& logits, Eigen::Index row, int token, Mat& d_logits) {
  const auto z = logits.row(row);
  const double m = z.maxCoeff();
  double sum = 0;
  for (Eigen::Index j = 0; j < z.size(); ++j) sum += std::exp(static_cast<double>(z(j)) - m);
  for (Eigen::Index j = 0; j < z.size(); ++j)
    d_logits(row, j) = static_cast<float>(-std::exp(static_cast<double>(z(j)) - m) / sum);
  d_logits(row, token) += 1.0f;
  return static_cast<double>(z(token)) - m - std::log(sum);
}

void check_row_and_token(Eigen::Index rows, Eigen::Index vocabulary, int row, int token) {
  if (row < 0 || row >= rows)
    fail(ErrorKind::Input, "attribution", "row " + std::to_string(row) + " of a pass of " + std::to_string(rows) +
                                              " rows");
  if (token < 0 || token >= vocabulary)
    fail(ErrorKind::Input, "attribution", "token " + std::to_string(token) + " outside the vocabulary of " +
                                              std::to_string(vocabulary));
}

}  // namespace

TokenAttribution gradient_x_input(const Config& config, const ModelWeights& weights, const std::vector<int>& source,
                                  const std::vector<int>& target, const Interventions& interventions, int row,
                                  int token) {
  // The traced pass (teacher-forced over the decoder's inputs), as the app and `trace` make it.
  const Trace trace = forward(config, weights, source, target, interventions);
  const Mat& logits = trace.logits;  // (rows, V)
  check_row_and_token(logits.rows(), logits.cols(), row, token);
  // f = ln softmax(z)_y at the row: df/dz_j = [j = y] - p_j there, 0 on every other row.
  TokenAttribution out;
  Mat d_logits = Mat::Zero(logits.rows(), logits.cols());
  out.f = log_probability_gradient(logits, row, token, d_logits);
  // The backward of training, for its gradients at the stacks' inputs (the weights' gradients are a by-product).
  ModelWeights grads = zeros_like(weights);
  Mat d_source, d_target;
  model_backward(config, weights, 1, trace, d_logits, grads, &d_source, &d_target);
  // With no dropout and no embedding norm the stack reads tok_embed + pos: df/d(tok_embed) = df/d(sum).
  if (config.has_encoder()) out.source = row_dots(trace.src.tok_embed, d_source);
  if (config.has_decoder()) out.target = row_dots(trace.tgt.tok_embed, d_target);
  return out;
}

TokenAttribution integrated_gradients(const Config& config, const ModelWeights& weights,
                                      const std::vector<int>& source, const std::vector<int>& target,
                                      const Interventions& interventions, int row, int token, int steps) {
  if (steps < 1 || steps > kMaxIntegratedGradientSteps)
    fail(ErrorKind::Input, "attribution", "integrated gradients take 1 to " +
                                              std::to_string(kMaxIntegratedGradientSteps) + " steps, not " +
                                              std::to_string(steps));
  // One batch of B = N + 1 copies of the sentence: copy k (0 .. N) reads its token embeddings scaled by k/N, so
  // copy 0 is the baseline and copy N the input itself. (As the training pass runs a batch: transformer/passes.h.)
  const int B = steps + 1;
  const int S = static_cast<int>(source.size()), T = static_cast<int>(target.size());
  auto repeated = [B](const std::vector<int>& ids) {
    std::vector<int> out;
    for (int b = 0; b < B; ++b) out.insert(out.end(), ids.begin(), ids.end());
    return out;
  };
  auto scales = [B, steps](int length) {
    std::vector<float> out;
    for (int b = 0; b < B; ++b) out.insert(out.end(), static_cast<size_t>(length), static_cast<float>(b) / steps);
    return out;
  };
  Trace t;
  t.sequences = B;
  t.interventions = interventions;
  if (config.has_encoder()) {
    t.src.ids = repeated(source);
    t.src.token_scale = scales(S);
    encoder_pass(config, weights, B, -1, Record::Backward, nullptr, t);  // encoder-only: its logits too
  }
  if (config.has_decoder()) {
    DecoderPass pass;
    for (int b = 0; b < B; ++b) {
      pass.rows.add_sequence(target);
      if (config.has_cross_attention()) pass.source_of.push_back(b);
    }
    pass.output_rows.resize(static_cast<size_t>(pass.rows.size()));
    for (size_t r = 0; r < pass.output_rows.size(); ++r) pass.output_rows[r] = static_cast<int>(r);
    pass.record = Record::Backward;
    pass.trace = &t;
    t.tgt.token_scale = scales(T);
    decoder_pass(config, weights, t, nullptr, pass);
  }
  const int rows = config.has_decoder() ? T : S;  // each copy's rows of logits
  check_row_and_token(rows, t.logits.cols(), row, token);
  // f of each copy at the row; the gradient flows from copies 1 .. N (the baseline's is not part of the sum).
  Mat d_logits = Mat::Zero(t.logits.rows(), t.logits.cols());
  TokenAttribution out;
  {
    Mat scratch = Mat::Zero(t.logits.rows(), t.logits.cols());
    out.f_baseline = log_probability_gradient(t.logits, row, token, scratch);  // copy 0: rows 0 .. rows-1
  }
  for (int b = 1; b < B; ++b) {
    const double f = log_probability_gradient(t.logits, static_cast<Eigen::Index>(b) * rows + row, token, d_logits);
    if (b == steps) out.f = f;
  }
  ModelWeights grads = zeros_like(weights);
  Mat d_source, d_target;
  model_backward(config, weights, B, t, d_logits, grads, &d_source, &d_target);
  // a_i = x_i . (1/N) sum_k g_k,i: x is copy N's token embedding (scale 1), g_k the gradient at copy k's input
  auto integrate = [&](const EmbeddingTrace& e, const Mat& d, int length) {
    Mat mean = Mat::Zero(length, d.cols());
    for (int b = 1; b < B; ++b) mean += d.middleRows(static_cast<Eigen::Index>(b) * length, length);
    mean /= static_cast<float>(steps);
    return row_dots(e.tok_embed.middleRows(static_cast<Eigen::Index>(steps) * length, length), mean);
  };
  if (config.has_encoder()) out.source = integrate(t.src, d_source, S);
  if (config.has_decoder()) out.target = integrate(t.tgt, d_target, T);
  return out;
}

}  // namespace sf
