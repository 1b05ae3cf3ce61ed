// y = x W^T for a few rows of x (a decoding step, a chunk of guessed tokens, one sentence).
//
// Eigen's GEMM copies ("packs") both operands into its own panel layout on every call. For a sentence of 20
// tokens the weight matrix is the big operand and is packed anew by every linear layer, a copy as costly as the
// arithmetic. Here the linear layers' weights are packed once, when the model is loaded (PackedWeights), and
// small_gemm_packed reads them as they lie: 64 outputs in four 16-lane registers, each row of x broadcast one
// input at a time, with no sums across lanes (README, Speed, has the timings).
// The blocks of W are shared out between threads (util/parallel.h), each writing its own columns of y.
//
// small_gemm_xwt (dot products, W unpacked) stays for W that is not a weight: one head's keys in attention's
// scores. small_gemm_xw: attention's probabilities times the values.
#pragma once
#include <cstdint>
#include <vector>

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
// W (N, K) laid out for small_gemm_packed, once, when a model is loaded (attach_packed_weights, model/weights.h):
// panels of kPanel consecutive rows of W (kPanel outputs), each stored k-major, the panel's kPanel weights of one
// input side by side (the last panel padded with zeros). As IEEE halves where every weight is exactly one (a model
// stored as F16, as the shipped ones are: half the bytes, the very same products), else as floats.
struct PackedWeights {
  static constexpr int kPanel = 64;
  int rows = 0, cols = 0;         // N, K of the matrix it was packed from
  std::vector<uint16_t> halves;   // (panels, K, kPanel) when as_halves()
  std::vector<float> floats;      // (panels, K, kPanel) otherwise
  bool as_halves() const { return !halves.empty(); }
};
// Packs W (N, K), its rows `w_stride` floats apart; as halves when `halves_if_exact` and every value is one.
void pack_weights(const float* w, int N, int K, long w_stride, bool halves_if_exact, PackedWeights& out);

// y (M, N) = x (M, K) W^T from W packed (x's rows `x_stride` floats apart, y contiguous). Each output is one
// running sum over k in order, fma(x[m][k], W[n][k], sum): with 64 outputs in 4 registers a row of x is
// broadcast k by k, so no sum is reduced across lanes and each loaded weight serves up to 6 rows (register
// blocks of 6 x 64). An output depends on its own row and column only: a row gives the same floats in a batch of
// any size or alone, on any number of threads, and halves give the floats' result bit for bit. With `bias` (N)
// each output is sum + bias[n], added once the sum is complete: the floats of adding it afterwards, without the
// extra pass over y. With `columns` >= 0 only the first `columns` outputs (a causal
// attention's rows need the keys up to their own position only), y's rows `y_stride` floats apart (0: as many as
// the outputs computed).
void small_gemm_packed(const float* x, int M, int K, long x_stride, const PackedWeights& w, float* y,
                       const float* bias = nullptr, int columns = -1, long y_stride = 0);
}  // namespace sf
