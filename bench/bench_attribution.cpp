// Attribution on the shipped translator (assets/models/de-en.safetensors: d_model 256, 3+3 layers, 8 heads), a
// 20-token source and a 20-token target, on OMP_NUM_THREADS threads of the pool (default 1). The PyTorch side is
// bench/bench_pytorch_attribution.py: the same model file (read into nn.Transformer's layers), ids and threads,
// with autograd.
//   BM_IntegratedGradients/N  integrated gradients of one prediction (the last row), N steps and the baseline as
//                             copies of the sentence in one batched pass and its backward (explain/attribution.h)
//   BM_IntegratedGradientsSentence/N  the same for every one of the 20 predictions (the app's whole map)
//   BM_GradientXInput         gradient x input of one prediction
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "bench_main.h"
#include "explain/attribution.h"
#include "model/model.h"
#include "util/parallel.h"
#include "util/paths.h"

namespace {

using namespace sf;

// The ids both sides read: source 4 + (7 i) % 7000 (an <eos> last), target <bos> then 4 + (11 i) % 5000.
std::vector<int> source_ids() {
  std::vector<int> ids;
  for (int i = 0; i < 19; ++i) ids.push_back(4 + (7 * i) % 7000);
  ids.push_back(3);
  return ids;
}
std::vector<int> target_ids() {
  std::vector<int> ids{2};
  for (int i = 1; i < 20; ++i) ids.push_back(4 + (11 * i) % 5000);
  return ids;
}
constexpr int kToken = 17;  // the token scored at the last row (any id: its log-probability is f)

const Model& bench_model() {
  static const Model m = load_model(shipped_model_path("de-en"));
  return m;
}

void BM_IntegratedGradients(benchmark::State& state) {
  const Model& m = bench_model();
  const std::vector<int> src = source_ids(), tgt = target_ids();
  const int steps = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const TokenAttribution a = integrated_gradients(m.config, m.weights, src, tgt, {}, 19, kToken, steps);
    benchmark::DoNotOptimize(a.source.data());
  }
  state.counters["threads"] = parallel_threads();
}
BENCHMARK(BM_IntegratedGradients)->Arg(32)->Arg(8)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_IntegratedGradientsSentence(benchmark::State& state) {
  const Model& m = bench_model();
  const std::vector<int> src = source_ids(), tgt = target_ids();
  std::vector<int> tokens(tgt.begin() + 1, tgt.end());
  tokens.push_back(kToken);
  for (auto _ : state) {
    const AttributionMap a = attribute_rows(m.config, m.weights, src, tgt, {}, tokens,
                                            AttributionMethod::IntegratedGradients, static_cast<int>(state.range(0)));
    benchmark::DoNotOptimize(a.values.data());
  }
}
BENCHMARK(BM_IntegratedGradientsSentence)->Arg(32)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GradientXInput(benchmark::State& state) {
  const Model& m = bench_model();
  const std::vector<int> src = source_ids(), tgt = target_ids();
  for (auto _ : state) {
    const TokenAttribution a = gradient_x_input(m.config, m.weights, src, tgt, {}, 19, kToken);
    benchmark::DoNotOptimize(a.source.data());
  }
}
BENCHMARK(BM_GradientXInput)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "1", 0);  // one thread unless asked (read when the pool starts)
  bench_model();  // load the weights before timing
  return sf::bench::run_benchmarks(argc, argv);
}
