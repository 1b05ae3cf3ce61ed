// This core's fp32 arithmetic peak (bench/peak_flops.h: 16 independent FMA chains, AVX-512 where the CPU has it,
// else AVX2 + FMA, no memory traffic): the ceiling bench_forward reports each pass against.
//
//   OMP_NUM_THREADS=1 taskset -c 1 build/bench/bench_peak_flops      -> counter GFLOP/s
#include <benchmark/benchmark.h>

#include "peak_flops.h"

namespace {

#ifdef SF_HAVE_FMA_PEAK
void BM_PeakFma(benchmark::State& state) {
  double flops = 0;
  for (auto _ : state) flops += sf::bench::fma_chains(1 << 20);
  state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PeakFma)->Unit(benchmark::kMillisecond);
#endif

}  // namespace

BENCHMARK_MAIN();
