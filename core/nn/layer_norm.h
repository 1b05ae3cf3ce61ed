// Layer normalisation over the last dimension (each row / token on its own):
//   mean = (1/C) sum_c x_c     std = sqrt((1/C) sum_c (x_c - mean)^2 + eps)     y = (x - mean) / std * gamma + beta
// The variance is the biased one, as torch.nn.LayerNorm. `std` records the denominator actually used
// (eps included), so y can be recomputed from x, mean and std alone.
#pragma once
#include "model/weights.h"
#include "util/tensor.h"

namespace sf {

struct LayerNormTrace {
  Mat out;   // (N, C)
  Vec mean;  // (N)
  Vec std;   // (N) sqrt(var + eps)
};

void layer_norm_forward(const ConstMatRef& x, const LayerNormWeights& w, float eps, LayerNormTrace& t);

}  // namespace sf
