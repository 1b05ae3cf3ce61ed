// Forward-pass and decoding benchmarks on one core (Eigen single-threaded).
//
//   model: d_model 256, 3+3 layers, 8 heads, d_ff 512, 8000-token vocabularies (the pytorch-tutorial family:
//   sinusoidal positions, post-norm, final norms), random weights from a fixed seed
//   BM_ForwardFullTrace/N     the whole traced pass (every intermediate kept) on N source and N target tokens
//   BM_DecodeStepKvCache/N    one incremental decoding step at position N-1 with a KV cache (logits only)
//   BM_DecodeStepRecompute/N  the same token by recomputing the decoder on the whole prefix of N tokens
//   BM_GreedyDecode20/kv|recompute  20 greedy tokens with and without the cache
//
// With STEPFORMER_BENCH_MODEL=PATH set, the weights are also written there as a model file (pytorch-tutorial
// names) for tools/bench_pytorch.py, so both sides time the same weights.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "decode/decoder.h"
#include "decode/kv_cache.h"
#include "model/model.h"
#include "transformer/forward.h"

namespace {

using namespace sf;

Config bench_config() {
  Config c;
  c.d_model = 256;
  c.n_heads = 8;
  c.n_encoder_layers = 3;
  c.n_decoder_layers = 3;
  c.d_ff = 512;
  c.src_vocab_size = 8000;
  c.tgt_vocab_size = 8000;
  c.max_positions = 512;
  c.encoder_final_norm = true;
  c.decoder_final_norm = true;
  return c;
}

ModelWeights random_weights(const Config& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto mat = [&](int r, int k, float s) {
    Mat m(r, k);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = s * normal(rng);
    return m;
  };
  auto lin = [&](int out, int in) {
    return LinearWeights{mat(out, in, 1.0f / std::sqrt(static_cast<float>(in))), mat(1, out, 0.02f), {}, nullptr};
  };
  auto ln = [&]() { return LayerNormWeights{RowVec::Ones(c.d_model), RowVec::Zero(c.d_model)}; };
  const int C = c.d_model, F = c.d_ff;
  auto attn = [&]() { return AttentionWeights{lin(C, C), lin(C, C), lin(C, C), lin(C, C)}; };
  ModelWeights w;
  w.src_embedding = mat(c.src_vocab_size, C, 1.0f / std::sqrt(static_cast<float>(C)));
  w.tgt_embedding = mat(c.tgt_vocab_size, C, 1.0f / std::sqrt(static_cast<float>(C)));
  for (int l = 0; l < c.n_encoder_layers; ++l) w.encoder_layers.push_back({attn(), ln(), {lin(F, C), lin(C, F)}, ln()});
  for (int l = 0; l < c.n_decoder_layers; ++l)
    w.decoder_layers.push_back({attn(), ln(), attn(), ln(), {lin(F, C), lin(C, F)}, ln()});
  w.encoder_norm = ln();
  w.decoder_norm = ln();
  w.generator = lin(c.tgt_vocab_size, C);
  return w;
}

struct BenchModel {
  Config config = bench_config();
  ModelWeights weights = random_weights(config, 2024);
  BenchModel() {
    if (const char* path = std::getenv("STEPFORMER_BENCH_MODEL")) {
      Model m;
      m.family = "pytorch-tutorial";
      m.config = config;
      std::vector<std::string> tokens = {"<unk>", "<pad>", "<bos>", "<eos>"};
      for (int i = 4; i < config.src_vocab_size; ++i) tokens.push_back("t" + std::to_string(i));
      m.src_vocab = Vocabulary(tokens, SpecialIds{});
      m.tgt_vocab = Vocabulary(tokens, SpecialIds{});
      m.weights = weights;
      save_model(m, path);
    }
  }
};

const BenchModel& model() {
  static const BenchModel m;
  return m;
}

// Token ids 4.. (no specials), the same on both sides of the comparison: id = 4 + (7 * i) % 7000.
std::vector<int> sentence(int n, bool with_bos) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back(4 + (7 * i) % 7000);
  if (with_bos) ids[0] = model().config.bos_id;
  return ids;
}

void BM_ForwardFullTrace(benchmark::State& state) {
  const BenchModel& m = model();
  const int n = static_cast<int>(state.range(0));
  const std::vector<int> src = sentence(n, false), tgt = sentence(n, true);
  Trace t;  // reused, as the app does: no allocation after the first pass
  for (auto _ : state) {
    forward(m.config, m.weights, src, tgt, {}, t);
    benchmark::DoNotOptimize(t.probs.data());
  }
  state.counters["tokens"] = n;
}
BENCHMARK(BM_ForwardFullTrace)->Arg(20)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)
    ->Unit(benchmark::kMillisecond);

void BM_DecodeStepKvCache(benchmark::State& state) {
  const BenchModel& m = model();
  const int n = static_cast<int>(state.range(0));
  const std::vector<int> tgt = sentence(n, true);
  Trace encoded;
  encode(m.config, m.weights, sentence(20, false), {}, encoded);
  KvCache cache = start_kv_cache(m.config, m.weights, encoded);
  for (int i = 0; i + 1 < n; ++i) decode_step(m.config, m.weights, encoded, tgt[static_cast<size_t>(i)], cache);
  for (auto _ : state) {
    RowVec logits = decode_step(m.config, m.weights, encoded, tgt.back(), cache);
    benchmark::DoNotOptimize(logits.data());
    truncate_kv_cache(cache, n - 1);
  }
}
BENCHMARK(BM_DecodeStepKvCache)->Arg(8)->Arg(20)->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond);

void BM_DecodeStepRecompute(benchmark::State& state) {
  const BenchModel& m = model();
  const int n = static_cast<int>(state.range(0));
  const std::vector<int> tgt = sentence(n, true);
  Trace encoded;
  encode(m.config, m.weights, sentence(20, false), {}, encoded);
  for (auto _ : state) {
    Trace t = encoded;
    decode_pass(m.config, m.weights, tgt, t);
    benchmark::DoNotOptimize(t.logits.data());
  }
}
BENCHMARK(BM_DecodeStepRecompute)->Arg(8)->Arg(20)->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond);

void BM_GreedyDecode20(benchmark::State& state) {
  const BenchModel& m = model();
  DecodeOptions o;
  o.max_length = 20;
  o.use_kv_cache = state.range(0) == 1;
  int tokens = 0;
  for (auto _ : state) {
    Decoder d(m.config, m.weights, sentence(20, false), {}, o);
    tokens = d.run();
  }
  state.counters["tokens"] = tokens;
  state.SetLabel(o.use_kv_cache ? "kv cache" : "recompute");
}
BENCHMARK(BM_GreedyDecode20)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "1", 1);
  Eigen::setNbThreads(1);
  model();  // build (and export) the weights before timing
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
