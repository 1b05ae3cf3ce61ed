#include "nn/backward.h"

#include <cmath>

#include "nn/linear.h"

namespace sf {

void linear_backward(const ConstMatRef& x, const LinearWeights& w, const ConstMatRef& dy, LinearWeights& grad,
                     Mat* dx) {
  // Both products shared out by blocks of their output columns (nn/linear.h): the same sums on any thread count.
  // (an empty grad.weight: the weights' gradient is not wanted, dx alone is: nn/backward.h)
  if (grad.weight.size() > 0)
    for_each_column_block(grad.weight.rows(), [&](Eigen::Index first, Eigen::Index n) {
      grad.weight.middleRows(first, n).noalias() += dy.middleCols(first, n).transpose() * x;  // (n, N) (N, in)
    });
  if (grad.bias.size() > 0) grad.bias.noalias() += dy.colwise().sum();
  if (dx) {
    dx->resize(dy.rows(), w.weight.cols());
    for_each_column_block(w.weight.cols(), [&](Eigen::Index first, Eigen::Index n) {
      dx->middleCols(first, n).noalias() = dy * w.weight.middleCols(first, n);  // (N, out) (out, n)
    });
  }
}

void layer_norm_backward(const ConstMatRef& x, const LayerNormTrace& t, const LayerNormWeights& w,
                         const ConstMatRef& dy, LayerNormWeights& grad, Mat& dx) {
  const Eigen::Index n = x.rows(), c = x.cols();
  Mat xhat = x;                                             // (N, C)
  xhat.colwise() -= t.mean;
  xhat.array().colwise() /= t.std.array();
  if (grad.gamma.size() > 0) grad.gamma.noalias() += (dy.array() * xhat.array()).matrix().colwise().sum();
  if (grad.beta.size() > 0) grad.beta.noalias() += dy.colwise().sum();
  Mat g = dy;                                               // dL/dxhat
  g.array().rowwise() *= w.gamma.array();
  const Vec mean_g = g.rowwise().mean();                    // (N)
  const Vec mean_gx = (g.array() * xhat.array()).rowwise().sum().matrix() / static_cast<float>(c);
  dx.resize(n, c);
  dx = g;
  dx.colwise() -= mean_g;
  dx.array() -= xhat.array().colwise() * mean_gx.array();
  dx.array().colwise() /= t.std.array();
}

void activation_backward(Activation act, const ConstMatRef& pre, Mat& d) {
  if (act == Activation::ReLU) {
    d.array() *= (pre.array() > 0.0f).cast<float>();
    return;
  }
  if (act == Activation::SiLU) {  // SiLU'(x) = s + x s (1 - s), s = sigmoid(x)
    float* dp = d.data();
    const float* xp = pre.data();
    for (Eigen::Index i = 0; i < d.size(); ++i) {
      const float s = 1.0f / (1.0f + std::exp(-xp[i]));
      dp[i] *= s * (1.0f + xp[i] * (1.0f - s));
    }
    return;
  }
  if (act == Activation::GELUTanh) {  // f = 0.5 x (1 + t), t = tanh(u), u = k (x + a x^3):
    // f' = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 a x^2)
    const float k = 0.79788456080286536f, a = 0.044715f;
    float* dp = d.data();
    const float* xp = pre.data();
    for (Eigen::Index i = 0; i < d.size(); ++i) {
      const float x = xp[i];
      const float t = std::tanh(k * (x + a * x * x * x));
      dp[i] *= 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * a * x * x);
    }
    return;
  }
  const float inv_sqrt2 = 0.70710678118654752f, inv_sqrt_2pi = 0.39894228040143268f;
  float* dp = d.data();
  const float* xp = pre.data();
  for (Eigen::Index i = 0; i < d.size(); ++i) {
    const float x = xp[i];
    const float cdf = 0.5f * (1.0f + std::erf(x * inv_sqrt2));
    const float pdf = inv_sqrt_2pi * std::exp(-0.5f * x * x);
    dp[i] *= cdf + x * pdf;
  }
}

void embedding_backward(const std::vector<int>& ids, float scale, const ConstMatRef& dout, Mat& dtable) {
  if (dtable.size() == 0) return;  // (not wanted)
  for (size_t i = 0; i < ids.size(); ++i) dtable.row(ids[i]) += scale * dout.row(static_cast<Eigen::Index>(i));
}

}  // namespace sf
