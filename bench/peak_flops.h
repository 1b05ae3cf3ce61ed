// This core's fp32 arithmetic peak: 16 independent fused multiply-add chains in registers (AVX-512 where the
// CPU has it, else AVX2 + FMA, chosen at run time as the kernels are: a portable build is compiled for
// x86-64-v2), no memory traffic. The ceiling the forward benchmarks are measured against:
// a pass of F floating-point operations cannot take less than F / peak. Shared by bench_peak_flops (which
// reports it) and bench_forward (which reports each pass's fraction of it).
#pragma once
#include <immintrin.h>

#include <chrono>
#include <cstring>

namespace sf::bench {

#define SF_HAVE_FMA_PEAK 1

// 16 independent chains (enough to cover the FMA latency on two pipes) of one width, in a function compiled for
// that instruction set (target attribute); returns the floating-point operations done (2 per FMA lane).
#define SF_FMA_CHAINS(VEC, LANES, SPLAT, STEP)                                          \
  constexpr int kChains = 16;                                                           \
  VEC acc[kChains];                                                                     \
  for (int i = 0; i < kChains; ++i) acc[i] = SPLAT(0.001f * static_cast<float>(i));     \
  const VEC a = SPLAT(0.999f), b = SPLAT(1e-4f);                                        \
  for (long n = 0; n < iterations; ++n) {                                               \
    _Pragma("GCC unroll 16") for (int i = 0; i < kChains; ++i) acc[i] = STEP(acc[i], a, b); \
  }                                                                                     \
  volatile float sink = 0;                                                              \
  for (int i = 0; i < kChains; ++i) { /* every chain is live */                         \
    alignas(64) float lanes[LANES];                                                     \
    std::memcpy(lanes, &acc[i], sizeof lanes);                                          \
    sink = sink + lanes[0];                                                             \
  }                                                                                     \
  return 2.0 * LANES * kChains * static_cast<double>(iterations);

__attribute__((target("avx512f"))) inline double fma_chains_avx512(long iterations) {
  SF_FMA_CHAINS(__m512, 16, _mm512_set1_ps, _mm512_fmadd_ps)
}
__attribute__((target("avx2,fma"))) inline double fma_chains_avx2(long iterations) {
  SF_FMA_CHAINS(__m256, 8, _mm256_set1_ps, _mm256_fmadd_ps)
}
#undef SF_FMA_CHAINS

// `iterations` rounds of the 16 chains on the widest FMA this CPU has: the floating-point operations done, or 0
// without FMA.
inline double fma_chains(long iterations) {
  if (__builtin_cpu_supports("avx512f")) return fma_chains_avx512(iterations);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return fma_chains_avx2(iterations);
  return 0;
}

// One thread's peak in GFLOP/s, the best of a few short runs (about 0.2 s in all); 0 without FMA.
inline double measure_peak_gflops() {
  double best = 0;
  for (int run = 0; run < 5; ++run) {
    const auto start = std::chrono::steady_clock::now();
    const double flops = fma_chains(1 << 20);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (flops / s / 1e9 > best) best = flops / s / 1e9;
  }
  return best;
}

}  // namespace sf::bench
