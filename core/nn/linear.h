// Linear layer in PyTorch's layout:  y = x W^T + b     x (N, in), W (out, in), b (1, out) or empty.
// Rows are independent, so a batch of sentences can be stacked as rows.
#pragma once
#include "model/weights.h"
#include "util/tensor.h"

namespace sf {

// out (N, out) = x (N, in) W^T + b. `out` is resized; it must not alias x.
void linear_forward(const ConstMatRef& x, const LinearWeights& w, Mat& out);
// Where the vector kernel is built (small_gemm_available) and the layer has a valid half copy
// (has_half_weights), the weight is read as halves: the same result, half the bytes.

}  // namespace sf
