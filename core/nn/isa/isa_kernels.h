// The kernels of one instruction set (nn/kernels.h), declared inside that set's namespace: every file of nn/isa/
// is compiled once per set with STEPFORMER_ISA (the namespace: isa_baseline, isa_avx2, isa_avx512),
// STEPFORMER_ISA_KIND (the KernelIsa), STEPFORMER_ISA_NAME, Eigen renamed to sf_eigen_<set> and the set's
// -march (core/CMakeLists.txt). These files include nothing of the core that holds Eigen types or inline
// functions of namespace sf: whatever they instantiate is theirs alone. The signatures are KernelSet's.
#pragma once
#include <cstdint>

#include "nn/kernels.h"

#if !defined(STEPFORMER_ISA) || !defined(STEPFORMER_ISA_KIND) || !defined(STEPFORMER_ISA_NAME)
#error "nn/isa/*.cpp are compiled once per instruction set by core/CMakeLists.txt, with STEPFORMER_ISA* defined"
#endif

namespace sf::STEPFORMER_ISA {

// The panel width of PackedWeights (nn/small_gemm.h checks that they agree).
constexpr int kPanel = 64;

bool softmax_row(const float* in, float* out, int count, float scale);
void layer_norm_rows(const float* x, long n, long c, long x_stride, const float* gamma, const float* beta, float eps,
                     float* out, float* mean, float* std);
// The few-row products are the vector ones where the set has AVX-512, or WebAssembly's SIMD (a web page's one
// set); else plain loops, for tests.
#if defined(__AVX512F__) || defined(__wasm_simd128__)
constexpr bool small_gemm_vectorised = true;
#else
constexpr bool small_gemm_vectorised = false;
#endif
void small_gemm_xwt(const float* x, int M, int K, long x_stride, const float* w, int N, float* y, long w_stride);
void small_gemm_xw(const float* x, int M, int K, long x_stride, const float* w, long w_stride, int N, float* y,
                   long y_stride);
void small_gemm_packed(const float* x, int M, int K, long x_stride, const float* w_floats, const uint16_t* w_halves,
                       int N, float* y, const float* bias, long y_stride);
void add_x_wt(const float* x, long M, long K, long x_stride, const float* w, long N, long w_stride, float* y,
              long y_stride);
void linear_few_rows(const float* x, long M, long K, long x_stride, const float* w, long N, const float* bias,
                     float* y);
void x_wt(const float* x, long M, long K, long x_stride, const float* w, long N, long w_stride, float* y,
          bool by_rows);
void x_w(const float* x, long M, long K, long x_stride, const float* w, long N, long w_stride, float* y, long y_stride,
         bool by_rows);

// This set's table.
const KernelSet& kernel_set();

}  // namespace sf::STEPFORMER_ISA
