// This core's fp32 arithmetic peak: 16 independent fused multiply-add chains in registers (AVX-512 when the
// build has it, else AVX2 + FMA), no memory traffic. The ceiling the forward benchmarks are measured against:
// a pass of F floating-point operations cannot take less than F / peak. Shared by bench_peak_flops (which
// reports it) and bench_forward (which reports each pass's fraction of it).
#pragma once
#include <immintrin.h>

#include <chrono>
#include <cstring>

namespace sf::bench {

#if defined(__AVX512F__)
using FmaVec = __m512;
constexpr int kFmaLanes = 16;
inline FmaVec fma_splat(float v) { return _mm512_set1_ps(v); }
inline FmaVec fma_step(FmaVec a, FmaVec b, FmaVec c) { return _mm512_fmadd_ps(a, b, c); }
#define SF_HAVE_FMA_PEAK 1
#elif defined(__AVX2__) && defined(__FMA__)
using FmaVec = __m256;
constexpr int kFmaLanes = 8;
inline FmaVec fma_splat(float v) { return _mm256_set1_ps(v); }
inline FmaVec fma_step(FmaVec a, FmaVec b, FmaVec c) { return _mm256_fmadd_ps(a, b, c); }
#define SF_HAVE_FMA_PEAK 1
#endif

#ifdef SF_HAVE_FMA_PEAK
// Runs `iterations` rounds of the 16 chains; returns the floating-point operations done (2 per FMA lane).
inline double fma_chains(long iterations) {
  constexpr int kChains = 16;  // enough independent chains to cover the FMA latency on two pipes
  FmaVec acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = fma_splat(0.001f * static_cast<float>(i));
  const FmaVec a = fma_splat(0.999f), b = fma_splat(1e-4f);
  for (long n = 0; n < iterations; ++n) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = fma_step(acc[i], a, b);
  }
  volatile float sink = 0;
  for (int i = 0; i < kChains; ++i) {
    alignas(64) float lanes[kFmaLanes];
    std::memcpy(lanes, &acc[i], sizeof lanes);
    sink = sink + lanes[0];  // every chain is live
  }
  return 2.0 * kFmaLanes * kChains * static_cast<double>(iterations);
}

// One thread's peak in GFLOP/s, the best of a few short runs (about 0.2 s in all).
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
#else
inline double measure_peak_gflops() { return 0; }
#endif

}  // namespace sf::bench
