// Training throughput: one optimiser step (forward with dropout, loss, backward, clipping, Adam) of the
// tutorials' model size (d_model 256, 8 heads, 3+3 layers, d_ff 512) with Multi30k-sized vocabularies, on a
// padded batch of random sentences. Reported as target tokens per second; bench/bench_pytorch_training.py
// runs the same model, batch and thread count in PyTorch for the ratio.
//   bench_training [--benchmark_filter=...]      threads: OMP_NUM_THREADS (default: all cores)
#include <benchmark/benchmark.h>

#include <random>

#include "bench_main.h"
#include "training_batch.h"
#include "train/batched_model.h"
#include "train/init.h"
#include "train/optimizer.h"
#include "train/parameters.h"
#include "util/parallel.h"

namespace sf {
namespace {

using bench::random_batch;
using bench::tutorial_config;

void BM_TrainingStep(benchmark::State& state) {
  const Config c = tutorial_config();
  ModelWeights w = initialize_weights(c, 1);
  ModelWeights g = zeros_like(w);
  Adam adam(w);
  const Batch batch = random_batch(static_cast<int>(state.range(0)), 10, 18, c, 2);
  BatchTrace trace;
  Mat dlogits;
  uint64_t step = 0;
  for (auto _ : state) {
    const LossResult r = batch_forward(c, w, batch, DropoutSettings{0.1f, 1, ++step}, 0.1f, trace, &dlogits);
    for (ParameterView& p : parameter_views(g)) std::fill(p.data, p.data + p.size, 0.0f);
    batch_backward(c, w, batch, trace, dlogits, g);
    clip_gradients(g, 1.0f);
    adam.step(w, g, 1e-4f);
    benchmark::DoNotOptimize(r.loss);
  }
  state.counters["target_tokens/s"] =
      benchmark::Counter(static_cast<double>(batch.target_tokens) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["threads"] = parallel_threads();
}
BENCHMARK(BM_TrainingStep)->Arg(64)->Arg(128)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sf

int main(int argc, char** argv) {
  return sf::bench::run_benchmarks(argc, argv);
}
