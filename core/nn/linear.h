// Linear layer in PyTorch's layout:  y = x W^T + b     x (N, in), W (out, in), b (1, out) or empty.
// Rows are independent, so a batch of sentences can be stacked as rows.
#pragma once
#include "model/weights.h"
#include "util/tensor.h"

namespace sf {

// out (N, out) = x (N, in) W^T + b. `out` is resized; it must not alias x.
void linear_forward(const ConstMatRef& x, const LinearWeights& w, Mat& out);

}  // namespace sf
