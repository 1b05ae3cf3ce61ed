// y = x W^T for a few rows of x (one sentence), without packing W.
//
// Eigen's GEMM copies ("packs") both operands into its own panel layout on every call. For a sentence of 20
// tokens the weight matrix is the big operand and is packed anew by every linear layer, a copy as costly as the
// arithmetic. Here each output is a dot product of a row of x and a row of W (both contiguous in their row-major
// layout), computed 4 x 4 at a time in 16-lane registers and summed across lanes at the end; W is read once,
// straight from where it lies. For one row (a decoding step) the time is that of reading W from memory, so the
// blocks of W are shared out between threads (util/parallel.h), each writing its own columns of y: two cores
// pull W through two memory paths.
#pragma once
#include <cstdint>

#include "util/tensor.h"

namespace sf {

// True when this build has the vector kernel (AVX-512F); otherwise callers use Eigen.
bool small_gemm_available();

// y (M, N) = x (M, K) W (N, K)^T, all row-major (x's rows `x_stride` floats apart, W's `w_stride`, 0: K; y's
// contiguous). A strided W is a block of columns of a wider matrix: one head's keys in attention's scores.
void small_gemm_xwt(const float* x, int M, int K, long x_stride, const float* w, int N, float* y, long w_stride = 0);
// y (M, N) = x (M, K) W (K, N), W not transposed (rows `w_stride` floats apart, y's `y_stride`), on this thread:
// attention's output for a few query rows, probabilities times one head's columns of the values. Each row of W is
// read once for all rows of x.
void small_gemm_xw(const float* x, int M, int K, long x_stride, const float* w, long w_stride, int N, float* y,
                   long y_stride);
// small_gemm_xwt with W stored as IEEE halves, converted to floats as they are loaded (F16C): half the bytes to
// read, and for halves made from floats exactly (attach_half_weights, model/weights.h) the very same result.
void small_gemm_xwt_f16(const float* x, int M, int K, long x_stride, const uint16_t* w, int N, float* y);

}  // namespace sf
