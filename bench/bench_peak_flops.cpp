// This core's fp32 arithmetic peak: 16 independent fused multiply-add chains in registers (AVX-512 when the
// build has it, else AVX2 + FMA), no memory traffic. The ceiling the forward benchmarks are measured against:
// a pass of F floating-point operations cannot take less than F / peak.
//
//   OMP_NUM_THREADS=1 taskset -c 1 build/bench/bench_peak_flops      -> counter GFLOP/s
#include <benchmark/benchmark.h>
#include <immintrin.h>

namespace {

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec splat(float v) { return _mm512_set1_ps(v); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec splat(float v) { return _mm256_set1_ps(v); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
#endif

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
void BM_PeakFma(benchmark::State& state) {
  constexpr int kChains = 16;  // enough independent chains to cover the FMA latency on two pipes
  constexpr long kIterations = 1 << 20;
  Vec acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = splat(0.001f * static_cast<float>(i));
  const Vec a = splat(0.999f), b = splat(1e-4f);
  for (auto _ : state) {
    for (long n = 0; n < kIterations; ++n) {
#pragma GCC unroll 16
      for (int i = 0; i < kChains; ++i) acc[i] = fma(acc[i], a, b);
    }
    for (int i = 0; i < kChains; ++i) benchmark::DoNotOptimize(acc[i]);  // every chain is live
  }
  const double flops = 2.0 * kLanes * kChains * static_cast<double>(kIterations) * static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PeakFma)->Unit(benchmark::kMillisecond);
#endif

}  // namespace

BENCHMARK_MAIN();
