// Linear layer in PyTorch's layout:  y = x W^T + b     x (N, in), W (out, in), b (1, out) or empty.
// Rows are independent, so a batch of sentences can be stacked as rows.
#pragma once
#include "model/weights.h"
#include "util/tensor.h"

namespace sf {

// out (N, out) = x (N, in) W^T + b. `out` is resized; it must not alias x.
void linear_forward(const ConstMatRef& x, const LinearWeights& w, Mat& out);

// Gives every linear layer whose weight is exactly representable in half precision its half copy
// (LinearWeights::half); returns how many got one. Results do not change: each half converts back to the very
// float it came from, and the products are summed in the same order.
int attach_half_weights(ModelWeights& weights);
// Whether linear_forward reads this layer's weight as halves.
bool uses_half_weights(const LinearWeights& w);

}  // namespace sf
