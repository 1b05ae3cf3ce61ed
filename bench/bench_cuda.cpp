// The CUDA backend's forward pass (core/backend/cuda_model.h) on the same weights as bench/bench_pytorch_cuda.py:
//
//   STEPFORMER_BENCH_MODEL=demo.safetensors STEPFORMER_BENCH_MODEL_BASE=base.safetensors  (one line)
//       build/bench/bench_forward --benchmark_filter=NONE                      # writes both models' weights
//   STEPFORMER_BENCH_MODEL=... STEPFORMER_BENCH_MODEL_BASE=... build/bench/bench_cuda
//   python3 bench/bench_pytorch_cuda.py demo.safetensors base.safetensors     # PyTorch CUDA eager, same weights
//
//   BM_CudaForwardLogits[Base]/N   one sentence, N source and N target tokens: the whole pass (logits and their
//                                  softmax) left in GPU memory, as PyTorch's forward leaves its output
//   BM_CudaForwardLogits[Base]Batch64/N   64 sentences of N + N tokens in one pass (bench/bench_pytorch_cuda.py's
//                                  batch64)
//   BM_CudaForwardLogitsBaseTf32/N  BM_CudaForwardLogitsBase with the products on TF32 tensor cores (--tf32)
//   BM_CudaForwardFullTrace/N      the same with every traced tensor copied back to host memory (what the app
//                                  would read)
//   BM_CudaTrainingStep/B          one training step on B random sentences (bench_training's BM_TrainingStep)
//   BM_CudaTrainingStepTf32/B      the same with the matrix products on TF32 tensor cores (train --tf32)
//   BM_CudaGreedy20                20 greedy tokens by CudaModel::greedy (the decoder reruns on each prefix)
//   BM_Decoder20/beam/gpu/base     a Decoder's 20 tokens (eos never chosen, so every run decodes 20), greedy
//                                  (beam 1) or beam search, its steps on the GPU (Decoder::compute_on: KV caches
//                                  in GPU memory; gpu 1) or on this machine's CPU (gpu 0), demo or base model
//   BM_AppRecompute/iv/gpu/long    what the app does after an intervention (bench_interventions' recompute): the
//                                  shipped model decodes the example sentence (long 1: the 240-token one) again
//                                  with it, guessing from the translation before (GuidedRedecoder), and traces the
//                                  final pass; iv 0 none, 1 a cross-attention head off, 2 positions off; on the GPU
//                                  (gpu 1: its checks chunks over caches there, the trace its traced forward) or on
//                                  this machine's CPU (gpu 0, every core)
// Wall-clock time per pass (each pass ends with cudaDeviceSynchronize). Without a GPU it says so and exits 1.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <memory>

#include "backend/backend.h"
#include "backend/cuda_model.h"
#include "bench_main.h"
#include "decode/decoder.h"
#include "model/model.h"
#include "train/init.h"
#include "app_recompute.h"
#include "training_batch.h"
#include "util/paths.h"

namespace {

using namespace sf;

struct GpuModel {
  Model model;
  std::unique_ptr<CudaModel> gpu;
};

GpuModel& gpu_model(bool base) {
  static GpuModel models[2];
  GpuModel& m = models[base ? 1 : 0];
  if (!m.gpu) {
    m.model = load_model(std::getenv(base ? "STEPFORMER_BENCH_MODEL_BASE" : "STEPFORMER_BENCH_MODEL"));
    m.gpu = std::make_unique<CudaModel>(m.model.config, m.model.weights);
  }
  return m;
}

// The ids of bench_forward.cpp and bench/bench_pytorch.py: 4 + (7 * i) % 7000, bos first on the target side.
std::vector<int> sentence(int n, bool with_bos) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back(4 + (7 * i) % 7000);
  if (with_bos) ids[0] = 2;
  return ids;
}

void forward_logits(benchmark::State& state, bool base) {
  GpuModel& m = gpu_model(base);
  const int n = static_cast<int>(state.range(0));
  const std::vector<int> src = sentence(n, false), tgt = sentence(n, true);
  for (auto _ : state) m.gpu->compute(src, tgt, {});
  state.counters["tokens"] = n;
}

void BM_CudaForwardLogits(benchmark::State& state) { forward_logits(state, false); }
BENCHMARK(BM_CudaForwardLogits)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)->Arg(512)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CudaForwardLogitsBase(benchmark::State& state) { forward_logits(state, true); }
BENCHMARK(BM_CudaForwardLogitsBase)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)->Arg(512)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// 64 copies of the sentence in one pass (bench/bench_pytorch_cuda.py's batch64).
void forward_batch64(benchmark::State& state, bool base) {
  GpuModel& m = gpu_model(base);
  const int n = static_cast<int>(state.range(0));
  const std::vector<std::vector<int>> src(64, sentence(n, false)), tgt(64, sentence(n, true));
  for (auto _ : state) m.gpu->compute_batch(src, tgt);
  state.counters["tokens"] = 64.0 * n;
}

void BM_CudaForwardLogitsBatch64(benchmark::State& state) { forward_batch64(state, false); }
BENCHMARK(BM_CudaForwardLogitsBatch64)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)->Arg(512)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CudaForwardLogitsBaseBatch64(benchmark::State& state) { forward_batch64(state, true); }
BENCHMARK(BM_CudaForwardLogitsBaseBatch64)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)->Arg(512)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// bench_training's step (its model and batches: training_batch.h) on the GPU: forward with dropout 0.1, label-smoothed
// loss, backward, clipping to norm 1, Adam. bench/bench_pytorch_training.py --device cuda times PyTorch's.
void training_steps(benchmark::State& state, bool tf32) {
  const Config c = bench::tutorial_config();
  const ModelWeights w = initialize_weights(c, 1);
  CudaModel gpu(c, w);
  gpu.start_training(AdamSettings{});
  gpu.set_tf32(tf32);
  const Batch batch = bench::random_batch(static_cast<int>(state.range(0)), 10, 18, c, 2);
  uint64_t step = 0;
  for (auto _ : state) benchmark::DoNotOptimize(gpu.train_step(batch, DropoutSettings{0.1f, 1, ++step}, 0.1f, 1.0f, 1e-4f));
  state.counters["target_tokens/s"] =
      benchmark::Counter(static_cast<double>(batch.target_tokens) * state.iterations(), benchmark::Counter::kIsRate);
}
void BM_CudaTrainingStep(benchmark::State& state) { training_steps(state, false); }
BENCHMARK(BM_CudaTrainingStep)->Arg(64)->Arg(128)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_CudaTrainingStepTf32(benchmark::State& state) { training_steps(state, true); }
BENCHMARK(BM_CudaTrainingStepTf32)->Arg(128)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CudaForwardLogitsBaseTf32(benchmark::State& state) {
  gpu_model(true).gpu->set_tf32(true);
  forward_logits(state, true);
  gpu_model(true).gpu->set_tf32(false);
}
BENCHMARK(BM_CudaForwardLogitsBaseTf32)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CudaForwardFullTrace(benchmark::State& state) {
  GpuModel& m = gpu_model(false);
  const int n = static_cast<int>(state.range(0));
  const std::vector<int> src = sentence(n, false), tgt = sentence(n, true);
  Trace t;
  for (auto _ : state) m.gpu->forward(src, tgt, {}, t);
}
BENCHMARK(BM_CudaForwardFullTrace)->Arg(20)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CudaGreedy20(benchmark::State& state) {
  GpuModel& m = gpu_model(false);
  for (auto _ : state) benchmark::DoNotOptimize(m.gpu->greedy(sentence(20, false), {}, 20));
}
BENCHMARK(BM_CudaGreedy20)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Decoder20(benchmark::State& state) {
  GpuModel& m = gpu_model(state.range(2) != 0);
  DecodeOptions options;
  options.max_length = 20;
  options.never_generate = {m.model.config.eos_id};
  options.strategy = state.range(0) > 1 ? DecodeStrategy::Beam : DecodeStrategy::Greedy;
  options.beam_width = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Decoder d(m.model.config, m.model.weights, sentence(20, false), {}, options);
    if (state.range(1) != 0) d.compute_on(*m.gpu);
    d.run();
    benchmark::DoNotOptimize(d.generated());
  }
}
BENCHMARK(BM_Decoder20)->ArgNames({"beam", "gpu", "base"})->ArgsProduct({{1, 4}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AppRecompute(benchmark::State& state) {
  static const Model m = load_model(shipped_model_path("de-en"));
  static const std::shared_ptr<CudaModel> gpu = std::make_shared<CudaModel>(m.config, m.weights);
  const bool on_gpu = state.range(1) != 0;
  const bench::AppRecompute before(m, bench::shipped_sentence(m, state.range(2) != 0));
  Interventions iv;
  if (state.range(0) == 1) iv.heads_off = {{AttentionKind::Cross, 1, 2}};
  if (state.range(0) == 2) iv.positional_encoding = false;
  size_t tokens = 0;
  for (auto _ : state) tokens = before.run(iv, on_gpu ? gpu : nullptr).size();
  state.counters["tokens"] = static_cast<double>(tokens);
}
BENCHMARK(BM_AppRecompute)->ArgNames({"iv", "gpu", "long"})->ArgsProduct({{0, 1, 2}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  if (!sf::backend_info().cuda_available) {
    std::fprintf(stderr, "bench_cuda: no usable GPU: %s\n", sf::backend_info().description.c_str());
    return 1;
  }
  if (!std::getenv("STEPFORMER_BENCH_MODEL") || !std::getenv("STEPFORMER_BENCH_MODEL_BASE")) {
    std::fprintf(stderr, "bench_cuda: set STEPFORMER_BENCH_MODEL and STEPFORMER_BENCH_MODEL_BASE to the model files "
                         "bench_forward writes (see the top of bench/bench_cuda.cpp)\n");
    return 1;
  }
  // Load both and run every size once before timing: the first passes load the kernels (CUDA's lazy loading)
  // and let cuBLAS choose its algorithms, which the first benchmark's mean would otherwise carry.
  for (bool base : {false, true})
    for (int n : {8, 16, 32, 64, 128, 256, 512}) {
      gpu_model(base).gpu->compute(sentence(n, false), sentence(n, true), {});
      gpu_model(base).gpu->compute_batch(std::vector<std::vector<int>>(64, sentence(n, false)),
                                         std::vector<std::vector<int>>(64, sentence(n, true)));
    }
  return sf::bench::run_benchmarks(argc, argv);
}
