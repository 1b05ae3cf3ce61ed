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

}  // namespace

TokenAttribution gradient_x_input(const Config& config, const ModelWeights& weights, const std::vector<int>& source,
                                  const std::vector<int>& target, const Interventions& interventions, int row,
                                  int token) {
  // The traced pass (teacher-forced over the decoder's inputs), as the app and `trace` make it.
  const Trace trace = forward(config, weights, source, target, interventions);
  const Mat& logits = trace.logits;  // (rows, V)
  if (row < 0 || row >= logits.rows())
    fail(ErrorKind::Input, "attribution", "row " + std::to_string(row) + " of a pass of " +
                                              std::to_string(logits.rows()) + " rows");
  if (token < 0 || token >= logits.cols())
    fail(ErrorKind::Input, "attribution", "token " + std::to_string(token) + " outside the vocabulary of " +
                                              std::to_string(logits.cols()));
  // f = ln softmax(z)_y at the row: df/dz_j = [j = y] - p_j there, 0 on every other row.
  const auto z = logits.row(row);
  const double m = z.maxCoeff();
  double sum = 0;
  for (Eigen::Index j = 0; j < z.size(); ++j) sum += std::exp(static_cast<double>(z(j)) - m);
  TokenAttribution out;
  out.f = static_cast<double>(z(token)) - m - std::log(sum);
  Mat d_logits = Mat::Zero(logits.rows(), logits.cols());
  for (Eigen::Index j = 0; j < z.size(); ++j)
    d_logits(row, j) = static_cast<float>(-std::exp(static_cast<double>(z(j)) - m) / sum);
  d_logits(row, token) += 1.0f;
  // The backward of training, for its gradients at the stacks' inputs (the weights' gradients are a by-product).
  ModelWeights grads = zeros_like(weights);
  Mat d_source, d_target;
  model_backward(config, weights, 1, trace, d_logits, grads, &d_source, &d_target);
  // With no dropout and no embedding norm the stack reads tok_embed + pos: df/d(tok_embed) = df/d(sum).
  if (config.has_encoder()) out.source = row_dots(trace.src.tok_embed, d_source);
  if (config.has_decoder()) out.target = row_dots(trace.tgt.tok_embed, d_target);
  return out;
}

}  // namespace sf
