// Position-wise feed-forward block:  FFN(x) = drop(act(x W1^T + b1)) W2^T + b2      x (N, C), hidden (N, F):
// its record and its activation here; the block itself, forward and backward, runs in transformer/layers.cpp.
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

// In place: m = act(m).
void apply_activation(Activation act, Mat& m);
// out = act(in); `out` is resized.
void apply_activation(Activation act, const Mat& in, Mat& out);

}  // namespace sf
