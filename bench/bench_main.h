// The main() of the benchmark programs: the allocator set as the app and the CLI set it (util/memory.h), so
// that large buffers are timed as they are used there, then Google Benchmark's own run.
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>

#include "model/model.h"
#include "model/name_tables.h"
#include "util/memory.h"

namespace sf::bench {

// The weights of a hub-sized random model (GPT-2's, BERT's) as their initialisation makes them: N(0, 0.02) for
// matrices, small biases (N(0, 0.01)), norms at 1 and 0 as allocated; the tied copies completed and the linear
// layers packed. Deterministic in the seed, so both sides of a comparison read the same numbers.
inline void fill_hub_random_weights(Model& m, uint32_t seed) {
  m.weights = allocate_weights(m.config);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for_each_weight(&m.config, m.weights, [&](const WeightRef& r) {
    if (!r.stored || (!r.is_matrix() && !r.linear)) return;
    float* p = r.data();
    for (int64_t i = 0; i < r.size(); ++i) p[i] = (r.is_matrix() ? 0.02f : 0.01f) * normal(rng);
  });
  complete_shared_weights(m.config, m.weights);
  attach_packed_weights(m.weights);
}

inline int run_benchmarks(int argc, char** argv) {
  keep_freed_memory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace sf::bench
