#include "train/loss.h"

#include <cmath>
#include <vector>

#include "util/error.h"
#include "util/parallel.h"

namespace sf {

LossResult label_smoothed_cross_entropy(const ConstMatRef& logits, const std::vector<int>& targets, int pad_id,
                                        float smoothing, Mat* dlogits) {
  const Eigen::Index n = logits.rows(), v = logits.cols();
  if (static_cast<Eigen::Index>(targets.size()) != n)
    fail(ErrorKind::Shape, "label_smoothed_cross_entropy",
         std::to_string(n) + " rows of logits but " + std::to_string(targets.size()) + " targets");
  LossResult r;
  for (int t : targets) r.tokens += t != pad_id;
  if (dlogits) dlogits->setZero(n, v);
  if (r.tokens == 0) return r;
  const double inv_tokens = 1.0 / r.tokens;
  // Each row's terms on the pool's threads, summed in row order after: the same loss on any thread count.
  std::vector<double> row_loss(static_cast<size_t>(n), 0.0), row_nll(static_cast<size_t>(n), 0.0);
  parallel_for(static_cast<int>(n), 16, [&](int begin, int end) {
  for (Eigen::Index i = begin; i < end; ++i) {
    const int y = targets[static_cast<size_t>(i)];
    if (y == pad_id) continue;
    if (y < 0 || y >= v) continue;  // checked by the caller's vocabulary; never index out of range here
    const auto z = logits.row(i);
    const float max = z.maxCoeff();
    const double log_sum = max + std::log(static_cast<double>((z.array() - max).exp().sum()));
    const double log_p_y = z(y) - log_sum;
    const double mean_log_p = z.cast<double>().mean() - log_sum;  // (1/V) sum_v log p_v
    row_nll[static_cast<size_t>(i)] = -log_p_y;
    row_loss[static_cast<size_t>(i)] = -(1.0 - smoothing) * log_p_y - smoothing * mean_log_p;
    if (dlogits) {
      auto d = dlogits->row(i);
      d = ((z.array() - static_cast<float>(log_sum)).exp() - smoothing / static_cast<float>(v)).matrix();
      d(y) -= 1.0f - smoothing;
      d *= static_cast<float>(inv_tokens);
    }
  }
  });
  double loss = 0.0, nll = 0.0;
  for (Eigen::Index i = 0; i < n; ++i) {
    loss += row_loss[static_cast<size_t>(i)];
    nll += row_nll[static_cast<size_t>(i)];
  }
  r.loss = loss * inv_tokens;
  r.nll = nll * inv_tokens;
  return r;
}

}  // namespace sf
