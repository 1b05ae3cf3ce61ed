#include "nn/feed_forward.h"

#include <cmath>

namespace sf {

namespace {
constexpr float kSqrt2OverPi = 0.79788456080286536f;  // sqrt(2 / pi)
}  // namespace

void apply_activation(Activation act, const Mat& in, Mat& out) {
  if (act == Activation::ReLU) {  // one pass, the copy and the activation together
    out = in.cwiseMax(0.0f);
    return;
  }
  out = in;
  apply_activation(act, out);
}

void apply_activation(Activation act, Mat& m) {
  if (act == Activation::ReLU) {
    m = m.cwiseMax(0.0f);
    return;
  }
  float* p = m.data();
  const Eigen::Index n = m.size();
  if (act == Activation::SiLU) {  // SiLU(x) = x * sigmoid(x) = x / (1 + e^-x)
    for (Eigen::Index i = 0; i < n; ++i) p[i] = p[i] / (1.0f + std::exp(-p[i]));
    return;
  }
  if (act == Activation::GELUTanh) {  // gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    for (Eigen::Index i = 0; i < n; ++i) {
      const float x = p[i];
      p[i] = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
    }
    return;
  }
  // GELU(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))
  for (Eigen::Index i = 0; i < n; ++i) p[i] = 0.5f * p[i] * (1.0f + std::erf(p[i] * 0.70710678118654752f));
}

}  // namespace sf
