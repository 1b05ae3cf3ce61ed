// Position-wise feed-forward block:  FFN(x) = act(x W1^T + b1) W2^T + b2      x (N, C), hidden (N, F).
// act is ReLU, the exact (erf) GELU, as torch.nn.functional.gelu, or SiLU x * sigmoid(x) (torch.nn.functional.silu).
#pragma once
#include "model/config.h"
#include "model/weights.h"
#include "util/tensor.h"

namespace sf {

struct FeedForwardTrace {
  Mat hidden_pre;  // (N, F) x W1^T + b1, before the activation
  Mat hidden;      // (N, F) after the activation (and dropout, in training)
  Mat keep;        // (N, F) dropout scale (training), or empty
  Mat out;         // (N, C)
};

void feed_forward_forward(const ConstMatRef& x, const FeedForwardWeights& w, Activation act, FeedForwardTrace& t);

// In place: m = act(m).
void apply_activation(Activation act, Mat& m);

}  // namespace sf
