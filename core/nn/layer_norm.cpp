#include "nn/layer_norm.h"

#include "util/error.h"

namespace sf {

void layer_norm_forward(const ConstMatRef& x, const LayerNormWeights& w, float eps, LayerNormTrace& t) {
  const Eigen::Index n = x.rows(), c = x.cols();
  if (w.gamma.size() != c || w.beta.size() != c)
    fail(ErrorKind::Shape, "layer_norm_forward",
         "input has " + std::to_string(c) + " columns, gamma/beta have " + std::to_string(w.gamma.size()));
  t.mean = x.rowwise().mean();                                        // (N)
  t.out = x;                                                          // (N, C)
  t.out.colwise() -= t.mean;                                          // x - mean
  t.std = (t.out.array().square().rowwise().sum() / static_cast<float>(c) + eps).sqrt().matrix();
  const Vec inv_std = t.std.cwiseInverse();
  t.out.array().colwise() *= inv_std.array();
  t.out.array().rowwise() *= w.gamma.array();
  t.out.rowwise() += w.beta;
  (void)n;
}

}  // namespace sf
