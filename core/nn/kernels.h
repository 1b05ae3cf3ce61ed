// The hot kernels (softmax rows, layer norm, the few-row products of nn/small_gemm.h and the forward's Eigen
// products), one table of them per instruction set, chosen once at run time:
//   avx512    x86-64-v4 (AVX-512 F/BW/CD/DQ/VL): the intrinsics of nn/isa/*, Eigen with 16 lanes
//   avx2      x86-64-v3 (AVX2 + FMA): Eigen with 8 lanes and FMA
//   baseline  the library's own flags (x86-64-v2 in a portable build; "native" with -march=native, where its
//             compile-time path is the one that machine has; the only set under WebAssembly or elsewhere)
// A set computes exactly the floats the whole library computed when compiled for that instruction set alone
// (tests/unit/test_kernel_dispatch.cpp checks it against hashes written by those builds).
//
// Every set is the same sources (nn/isa/*.cpp) compiled again with its flags, inside its own namespace
// (sf::isa_<set>) and with Eigen's namespace renamed (-DEigen=sf_eigen_<set>): no inline function or template
// instantiation is shared between sets, so the linker can never hand one set's AVX-512 code to another
// (tests/check_isa_symbols.sh checks the objects and the linked program). The table speaks plain pointers only.
//
// The set in use: the best the CPU has (cpuid), unless STEPFORMER_KERNELS=baseline|avx2|avx512 asks for another
// (an unknown name or one the CPU lacks: the best, with a line on stderr), or use_kernels() changed it.
#pragma once
#include <cstdint>

namespace sf {

enum class KernelIsa { baseline, avx2, avx512 };

struct KernelSet {
  KernelIsa isa;
  const char* name;  // "avx512", "avx2", "baseline" or "native"
  // nn/softmax.h
  bool (*softmax_row)(const float* in, float* out, int count, float scale);
  // nn/layer_norm.h: x (n, c), rows x_stride floats apart; out (n, c) contiguous, mean (n), std (n).
  void (*layer_norm_rows)(const float* x, long n, long c, long x_stride, const float* gamma, const float* beta,
                          float eps, float* out, float* mean, float* std);
  // nn/small_gemm.h. small_gemm_vectorised: the few-row kernels are the vector ones (AVX-512); elsewhere they are
  // plain loops, for tests, and callers use the Eigen products below.
  bool small_gemm_vectorised;
  void (*small_gemm_xwt)(const float* x, int M, int K, long x_stride, const float* w, int N, float* y, long w_stride);
  void (*small_gemm_xw)(const float* x, int M, int K, long x_stride, const float* w, long w_stride, int N, float* y,
                        long y_stride);
  // W packed (PackedWeights: `halves` or `floats`, the other null), its first N outputs into y's rows.
  void (*small_gemm_packed)(const float* x, int M, int K, long x_stride, const float* w_floats,
                            const uint16_t* w_halves, int N, float* y, const float* bias, long y_stride);
  // Eigen's products, all row-major (a matrix's rows `*_stride` floats apart):
  //   y (M, N) += x (M, K) W (N, K)^T                       linear_forward's column blocks
  void (*add_x_wt)(const float* x, long M, long K, long x_stride, const float* w, long N, long w_stride, float* y,
                   long y_stride);
  //   y (M, N) = x W^T + bias (bias null: none), through a column-major product   linear_forward's few rows
  void (*linear_few_rows)(const float* x, long M, long K, long x_stride, const float* w, long N, const float* bias,
                          float* y);
  //   y (M, N) = x (M, K) W (N, K)^T, y contiguous; by_rows: one matrix-vector product per row of x
  void (*x_wt)(const float* x, long M, long K, long x_stride, const float* w, long N, long w_stride, float* y,
               bool by_rows);
  //   y (M, N) = x (M, K) W (K, N); by_rows as above                              attention's P V
  void (*x_w)(const float* x, long M, long K, long x_stride, const float* w, long N, long w_stride, float* y,
              long y_stride, bool by_rows);
};

// The set in use.
const KernelSet& kernels();
// The set for `isa`, or null where this build has none or this CPU cannot run it.
const KernelSet* kernel_set(KernelIsa isa);
// Makes `isa`'s set the one in use (tests, benchmarks); false, changing nothing, where kernel_set(isa) is null.
// Not to be called while another thread runs kernels.
bool use_kernels(KernelIsa isa);
const char* kernel_isa_name(KernelIsa isa);  // "baseline", "avx2", "avx512"

}  // namespace sf
