// softmax_row (nn/softmax.h) for one instruction set (nn/isa/isa_kernels.h): with AVX-512, Cephes' expf on 16
// lanes; without, Eigen's exp on this set's packets.
#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "nn/isa/isa_kernels.h"
#include "nn/isa/lanes.h"

namespace sf::STEPFORMER_ISA {

#if defined(__AVX512F__)

namespace {

// exp(x) on 16 lanes for x <= 0 (a softmax's x - max): x = n ln2 + r with n = round(x / ln2), |r| <= ln2 / 2
// (ln2 in two parts, so r is exact to a float), exp(r) by a degree-6 polynomial in Horner's form (coefficients
// fitted to exp's relative error on that interval: under 1e-7, a float's own rounding), times 2^n by scalef.
// Under -87.3 (exp < 2^-126, a normal float's least) the lane is 0: a blocked cell's -inf among them. NaN stays
// NaN (max and the comparison pass it through), so a NaN score still spoils its row's sum.
inline __m512 exp_nonpositive(__m512 x) {
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);  // x - n ln2_hi (exact: ln2_hi has 9 bits)
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);       // - n ln2_lo
  __m512 p = _mm512_set1_ps(1.385929062962532e-3f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.374763652682304e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.166772589087486e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.666642129421234e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.999999403953552e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_mask_mov_ps(_mm512_scalef_ps(p, n), underflow, _mm512_setzero_ps());
}

// s * x rounded to a float before anything else reads it: with the rounding given, the compiler cannot fuse the
// product into the subtraction that follows (GCC contracts a * b - c into one fma in C++), so a row scaled here
// gives the same floats as one scaled beforehand (attention's traced scores).
inline __m512 scaled(__m512 x, __m512 s) { return _mm512_mul_round_ps(x, s, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

}  // namespace

bool softmax_row(const float* in, float* out, int count, float scale) {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  const int whole = count / 16 * 16;
  const __mmask16 tail = first_lanes(count - whole);
  // The maximum of the raw cells: scale > 0 keeps their order, and rounding s*x is monotone, so max(s x) = s max(x).
  __m512 max16 = _mm512_set1_ps(neg_inf);
  for (int j = 0; j < whole; j += 16) max16 = _mm512_max_ps(max16, _mm512_loadu_ps(in + j));
  if (tail) max16 = _mm512_mask_max_ps(max16, tail, max16, _mm512_maskz_loadu_ps(tail, in + whole));
  const float max = max_of_lanes(max16) * scale;
  if (!(max > neg_inf) && !std::isnan(max)) return false;
  const __m512 m = _mm512_set1_ps(max), s = _mm512_set1_ps(scale);
  __m512 sum16 = _mm512_setzero_ps();
  for (int j = 0; j < whole; j += 16) {
    const __m512 e = exp_nonpositive(_mm512_sub_ps(scaled(_mm512_loadu_ps(in + j), s), m));
    sum16 = _mm512_add_ps(sum16, e);
    _mm512_storeu_ps(out + j, e);
  }
  if (tail) {
    const __m512 e = _mm512_maskz_mov_ps(
        tail, exp_nonpositive(_mm512_sub_ps(scaled(_mm512_maskz_loadu_ps(tail, in + whole), s), m)));
    sum16 = _mm512_add_ps(sum16, e);
    _mm512_mask_storeu_ps(out + whole, tail, e);
  }
  const __m512 inverse = _mm512_set1_ps(1.0f / sum_of_lanes(sum16));
  for (int j = 0; j < whole; j += 16) _mm512_storeu_ps(out + j, _mm512_mul_ps(_mm512_loadu_ps(out + j), inverse));
  if (tail) _mm512_mask_storeu_ps(out + whole, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, out + whole), inverse));
  return true;
}

#else

bool softmax_row(const float* in, float* out, int count, float scale) {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  Eigen::Map<const Eigen::RowVectorXf> x(in, count);
  Eigen::Map<Eigen::RowVectorXf> p(out, count);
  const float max = count > 0 ? x.maxCoeff() * scale : neg_inf;
  if (!(max > neg_inf) && !std::isnan(max)) return false;
  p = x * scale;  // rounded before the subtraction, as with AVX-512
  p.array() -= max;
  // Below -87.3 the exponential is 0, as in the AVX-512 path (exp_nonpositive): Eigen's vectorised exp clamps its
  // argument at -88.38, so a blocked cell (-inf) would get 1.5e-39, not 0. (Found by building this path on an
  // AVX-512 machine: tests/CMakeLists.txt's stepformer_kernel_tests_*.)
  p = (p.array() < -87.3f).select(0.0f, p.array().exp()).matrix();
  // The sum in double: with SSE's 4 lanes, a float sum of 8,000 logits drifted 1.1e-6 from the exact probability
  // (AVX-512's 16 partial sums stay under 1e-6); then times 1 / sum, as the AVX-512 path does.
  p *= static_cast<float>(1.0 / p.cast<double>().sum());
  return true;
}

#endif

}  // namespace sf::STEPFORMER_ISA
