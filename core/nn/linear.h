// Linear layer in PyTorch's layout:  y = x W^T + b     x (N, in), W (out, in), b (1, out) or empty.
// Rows are independent, so a batch of sentences can be stacked as rows.
#pragma once
#include <functional>

#include "model/weights.h"
#include "util/tensor.h"

namespace sf {

// Runs block(first, n) for the blocks of `columns` output columns (64 each, the last up to 79) on the pool's
// threads: how the large products of the forward and the backward share out their work. The blocks depend on
// `columns` alone, so the results do not depend on the number of threads.
void for_each_column_block(Eigen::Index columns, const std::function<void(Eigen::Index, Eigen::Index)>& block);

// out (N, out) = x (N, in) W^T + b. `out` is resized; it must not alias x.
void linear_forward(const ConstMatRef& x, const LinearWeights& w, Mat& out);
// Where the vector kernel is built (small_gemm_available): from the layer's packed copy at any number of rows
// (has_packed_weights; halves for a model stored as F16: the same result, half the bytes); without one, fewer
// than 128 rows from a copy packed for the call, more with Eigen's GEMM.

}  // namespace sf
