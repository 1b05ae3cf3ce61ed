#include "nn/small_gemm.h"

#include <algorithm>
#include <cstring>

#include "io/safetensors.h"
#include "nn/kernels.h"

namespace sf {

static_assert(PackedWeights::kPanel == 64, "nn/isa/isa_kernels.h's kPanel is the same width");

// The products are the kernel set's in use (nn/kernels.h, nn/isa/small_gemm_kernels.cpp); packing is the same
// for every set, here.
bool small_gemm_available() { return kernels().small_gemm_vectorised; }

void small_gemm_xwt(const float* x, int M, int K, long x_stride, const float* w, int N, float* y, long w_stride) {
  kernels().small_gemm_xwt(x, M, K, x_stride, w, N, y, w_stride > 0 ? w_stride : K);
}

void small_gemm_xw(const float* x, int M, int K, long x_stride, const float* w, long w_stride, int N, float* y,
                   long y_stride) {
  kernels().small_gemm_xw(x, M, K, x_stride, w, w_stride, N, y, y_stride);
}

void small_gemm_packed(const float* x, int M, int K, long x_stride, const PackedWeights& w, float* y,
                       const float* bias, int columns, long y_stride) {
  const int N = columns >= 0 ? std::min(columns, w.rows) : w.rows;
  if (y_stride <= 0) y_stride = N;
  kernels().small_gemm_packed(x, M, K, x_stride, w.as_halves() ? nullptr : w.floats.data(),
                              w.as_halves() ? w.halves.data() : nullptr, N, y, bias, y_stride);
}

namespace {

// W (N, K), rows `w_stride` apart, into the packed layout: row n's weight k to panel n / 64, slot k * 64 + n % 64,
// the padding rows of the last panel zeros. In tiles of 16 inputs: each row's 16 values (one cache line) read
// once, written to 16 rows of the panel (4 KB, in L1 until the tile is done), so that packing a weight for one
// call (linear_forward without a packed copy) costs about what a few rows of arithmetic do.
template <typename T>
void pack_panels(const T* w, int N, int K, long w_stride, std::vector<T>& out) {
  constexpr int P = PackedWeights::kPanel, kTile = 16;
  out.assign(static_cast<size_t>((N + P - 1) / P) * static_cast<size_t>(K) * P, T(0));
  for (int n0 = 0; n0 < N; n0 += P) {
    const int columns = std::min(P, N - n0);
    T* dst = out.data() + static_cast<size_t>(n0 / P) * static_cast<size_t>(K) * P;
    for (int k0 = 0; k0 < K; k0 += kTile) {
      const int k_end = std::min(K, k0 + kTile);
      for (int c = 0; c < columns; ++c) {
        const T* src = w + (n0 + c) * w_stride;
        for (int k = k0; k < k_end; ++k) dst[static_cast<long>(k) * P + c] = src[k];
      }
    }
  }
}

// W as halves, row-major (N, K), when every value is exactly one (a NaN is not): else false.
bool exact_halves(const float* w, int N, int K, long w_stride, std::vector<uint16_t>& halves) {
  halves.resize(static_cast<size_t>(N) * static_cast<size_t>(K));
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) {
      const float value = w[n * w_stride + k];
      const uint16_t h = float_to_f16(value);
      const float back = f16_to_float(h);
      if (std::memcmp(&back, &value, sizeof(float)) != 0) return false;
      halves[static_cast<size_t>(n) * K + k] = h;
    }
  return true;
}

}  // namespace

void pack_weights(const float* w, int N, int K, long w_stride, bool halves_if_exact, PackedWeights& out) {
#if defined(__wasm_simd128__)
  // WebAssembly's SIMD has no half-to-float conversion: its kernel reads floats (nn/isa/small_gemm_kernels.cpp).
  halves_if_exact = false;
#endif
  out.rows = N;
  out.cols = K;
  std::vector<uint16_t> row_major;
  if (halves_if_exact && exact_halves(w, N, K, w_stride, row_major)) {
    pack_panels(row_major.data(), N, K, K, out.halves);
    out.floats.clear();
    return;
  }
  out.halves.clear();
  pack_panels(w, N, K, w_stride, out.floats);
}

}  // namespace sf
