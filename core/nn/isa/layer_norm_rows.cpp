// layer_norm_rows (nn/layer_norm.h's layer_norm_forward, its checks done) for one instruction set
// (nn/isa/isa_kernels.h): with AVX-512 a row at a time in registers; without, Eigen's whole-matrix expression.
#include <Eigen/Core>
#include <cmath>

#include "nn/isa/isa_kernels.h"
#include "nn/isa/lanes.h"

namespace sf::STEPFORMER_ISA {

#if defined(__AVX512F__)

namespace {

// sum_c f(x_c) over one row of `c` floats, f applied to 16 at a time (the tail masked to zeros, which f keeps
// zero): four running sums of 16 lanes, so that the adds do not wait on each other.
template <class F>
inline float row_sum(const float* x, int c, F f) {
  __m512 s[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  int j = 0;
  for (; j + 64 <= c; j += 64)
    for (int u = 0; u < 4; ++u) s[u] = _mm512_add_ps(s[u], f(_mm512_loadu_ps(x + j + 16 * u), 0xFFFF));
  for (; j < c; j += 16) {
    const __mmask16 m = c - j >= 16 ? __mmask16(0xFFFF) : first_lanes(c - j);
    s[0] = _mm512_add_ps(s[0], f(_mm512_maskz_loadu_ps(m, x + j), m));
  }
  return sum_of_lanes(_mm512_add_ps(_mm512_add_ps(s[0], s[1]), _mm512_add_ps(s[2], s[3])));
}

}  // namespace

#endif

void layer_norm_rows(const float* x_data, long n, long c, long x_stride, const float* gamma, const float* beta,
                     float eps, float* out_data, float* mean_data, float* std_data) {
#if defined(__AVX512F__)
  // One row at a time, read three times while it is in L1 (its sum, its squared deviations, the output): the
  // whole-matrix expression made seven passes over the (N, C) matrix (a 128-token sentence: 10 us a norm hot,
  // more cold, 17 norms a forward). Each output is (x - mean) * (1 / std) times gamma plus beta, the last two in
  // one fma (GCC contracts them); the two sums add in this loop's order. Against the whole-matrix expression
  // the floats differ in their last bits, well inside the PyTorch fixtures' 1e-5.
  const int cols = static_cast<int>(c);
  const float count = static_cast<float>(c);
  for (long i = 0; i < n; ++i) {
    const float* in = x_data + i * x_stride;
    float* out = out_data + i * c;
    const float mean = row_sum(in, cols, [](__m512 v, __mmask16) { return v; }) / count;
    const __m512 m = _mm512_set1_ps(mean);
    const float var = row_sum(in, cols, [m](__m512 v, __mmask16 k) {
                        const __m512 d = _mm512_maskz_sub_ps(k, v, m);
                        return _mm512_mul_ps(d, d);
                      }) / count;
    const float std = std::sqrt(var + eps);
    const __m512 inv_std = _mm512_set1_ps(1.0f / std);
    for (int j = 0; j < cols; j += 16) {
      const __mmask16 k = cols - j >= 16 ? __mmask16(0xFFFF) : first_lanes(cols - j);
      __m512 y = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, in + j), m), inv_std);
      y = _mm512_mul_ps(y, _mm512_maskz_loadu_ps(k, gamma + j));
      y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(k, beta + j));
      _mm512_mask_storeu_ps(out + j, k, y);
    }
    mean_data[i] = mean;
    std_data[i] = std;
  }
#else
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor, 0, Eigen::OuterStride<>> x(x_data, n, c, Eigen::OuterStride<>(x_stride));
  Eigen::Map<RowMajor> out(out_data, n, c);                           // (N, C)
  Eigen::Map<Eigen::VectorXf> mean(mean_data, n), std(std_data, n);   // (N)
  const Eigen::Map<const Eigen::RowVectorXf> g(gamma, c), b(beta, c); // (1, C)
  mean = x.rowwise().mean();
  out = x;
  out.colwise() -= mean;                                              // x - mean
  std = (out.array().square().rowwise().sum() / static_cast<float>(c) + eps).sqrt().matrix();
  const Eigen::VectorXf inv_std = std.cwiseInverse();
  out.array().colwise() *= inv_std.array();
  out.array().rowwise() *= g.array();
  out.rowwise() += b;
#endif
}

}  // namespace sf::STEPFORMER_ISA
