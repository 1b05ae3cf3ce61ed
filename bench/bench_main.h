// The main() of the benchmark programs: the allocator set as the app and the CLI set it (util/memory.h), so
// that large buffers are timed as they are used there, then Google Benchmark's own run.
#pragma once
#include <benchmark/benchmark.h>

#include "util/memory.h"

namespace sf::bench {

inline int run_benchmarks(int argc, char** argv) {
  keep_freed_memory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace sf::bench
