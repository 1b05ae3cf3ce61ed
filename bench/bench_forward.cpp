// Forward-pass and decoding benchmarks, on OMP_NUM_THREADS threads of the pool (util/parallel.h; default 1).
//
//   demo model: d_model 256, 3+3 layers, 8 heads, d_ff 512, 8000-token vocabularies
//   base model: d_model 512, 6+6 layers, 8 heads, d_ff 2048, 32000-token vocabularies (the paper's base size:
//               44 M parameters in the layers, 49 M in the embeddings and the output layer)
//   both the pytorch-tutorial family (sinusoidal positions, post-norm, final norms), random weights, fixed seeds
//   BM_ForwardFullTrace/N       the demo model's whole traced pass (every intermediate kept) on N + N tokens
//   BM_ForwardFullTraceBase/N   the same on the base model
//   BM_ForwardLogits[Base]/N    what PyTorch's forward computes (the logits and their softmax), keeping only what
//                               the next layer reads (Record::Output): the comparison with bench/bench_pytorch.py
//   BM_DecodeStepKvCache/N      one incremental decoding step at position N-1 with a KV cache (logits only)
//   BM_DecodeStepRecompute/N    the same token by recomputing the decoder on the whole prefix of N tokens
//   BM_GreedyDecode20/kv|recompute  20 greedy tokens with and without the cache
// The forward benchmarks report `peak`: the pass's floating-point operations per second as a fraction of this
// core's FMA peak (bench/peak_flops.h) times the threads.
//
// With STEPFORMER_BENCH_MODEL=PATH (and STEPFORMER_BENCH_MODEL_BASE=PATH) set, the weights are also written there
// as model files (pytorch-tutorial names) for bench/bench_pytorch.py, so both sides time the same weights.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>

#include "bench_main.h"
#include "decode/decoder.h"
#include "decode/kv_cache.h"
#include "model/model.h"
#include "peak_flops.h"
#include "transformer/forward.h"
#include "transformer/passes.h"
#include "util/parallel.h"

namespace {

using namespace sf;

Config bench_config(bool base = false) {
  Config c;
  c.d_model = base ? 512 : 256;
  c.n_heads = 8;
  c.n_encoder_layers = base ? 6 : 3;
  c.n_decoder_layers = base ? 6 : 3;
  c.d_ff = base ? 2048 : 512;
  c.src_vocab_size = base ? 32000 : 8000;
  c.tgt_vocab_size = base ? 32000 : 8000;
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
  Config config;
  ModelWeights weights;
  explicit BenchModel(bool base) : config(bench_config(base)), weights(random_weights(config, base ? 2025 : 2024)) {
    attach_packed_weights(weights);  // as load_model does
    if (const char* path = std::getenv(base ? "STEPFORMER_BENCH_MODEL_BASE" : "STEPFORMER_BENCH_MODEL")) {
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
  static const BenchModel m(false);
  return m;
}

const BenchModel& base_model() {
  static const BenchModel m(true);
  return m;
}

// Token ids 4.. (no specials), the same on both sides of the comparison: id = 4 + (7 * i) % 7000.
std::vector<int> sentence(int n, bool with_bos) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back(4 + (7 * i) % 7000);
  if (with_bos) ids[0] = model().config.bos_id;
  return ids;
}

// Floating-point operations of the traced pass on n source and n target tokens (2 per multiply-add): the
// linear layers, the attention products (Q K^T and P V) and the output layer.
double forward_flops(const Config& c, int n) {
  const double C = c.d_model, F = c.d_ff, N = n, V = c.tgt_vocab_size;
  const double encoder = c.n_encoder_layers * (4 * N * C * C + 2 * N * N * C + 2 * N * C * F);
  const double decoder = c.n_decoder_layers * (4 * N * C * C + 2 * N * N * C           // self-attention
                                               + 4 * N * C * C + 2 * N * N * C         // cross: Q, O, K, V; products
                                               + 2 * N * C * F);
  return 2.0 * (encoder + decoder + N * C * V);
}

double peak_flops_per_second() {
  static const double peak = sf::bench::measure_peak_gflops() * 1e9 * parallel_threads();
  return peak;
}

// The traced pass (every intermediate kept, as the app shows it) or, traced false, what PyTorch's forward
// computes: the logits and their softmax, keeping only what the next layer reads (Record::Output).
void forward_pass(benchmark::State& state, const BenchModel& m, bool traced) {
  const int n = static_cast<int>(state.range(0));
  const std::vector<int> src = sentence(n, false), tgt = sentence(n, true);
  Trace t;  // reused, as the app does: no allocation after the first pass
  std::vector<int> all_rows(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) all_rows[static_cast<size_t>(i)] = i;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (traced) {
      forward(m.config, m.weights, src, tgt, {}, t);
      benchmark::DoNotOptimize(t.probs.data());
    } else {
      t.src.ids = src;
      encoder_pass(m.config, m.weights, 1, -1, Record::Output, nullptr, t);
      DecoderPass pass;
      pass.rows = DecoderRows::one_sequence(tgt);
      pass.output_rows = all_rows;
      Mat probs;
      masked_softmax(decoder_pass(m.config, m.weights, t, nullptr, pass), Mat(), probs);
      benchmark::DoNotOptimize(probs.data());
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.counters["tokens"] = n;
  state.counters["threads"] = parallel_threads();
  if (peak_flops_per_second() > 0)  // the pass's FLOP/s over the peak of the threads it ran on (wall clock)
    state.counters["peak"] =
        forward_flops(m.config, n) * static_cast<double>(state.iterations()) / seconds / peak_flops_per_second();
}

void BM_ForwardFullTrace(benchmark::State& state) { forward_pass(state, model(), true); }
BENCHMARK(BM_ForwardFullTrace)->Arg(20)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ForwardFullTraceBase(benchmark::State& state) { forward_pass(state, base_model(), true); }
BENCHMARK(BM_ForwardFullTraceBase)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ForwardLogits(benchmark::State& state) { forward_pass(state, model(), false); }
BENCHMARK(BM_ForwardLogits)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ForwardLogitsBase(benchmark::State& state) { forward_pass(state, base_model(), false); }
BENCHMARK(BM_ForwardLogitsBase)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

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

// A beam of WIDTH for 20 steps on a 20-token sentence with the KV cache (the demo model's random weights rarely
// end a hypothesis early, so every step feeds WIDTH hypotheses): what the app's `decode beam WIDTH` costs.
void BM_BeamDecode20(benchmark::State& state) {
  const BenchModel& m = model();
  DecodeOptions o;
  o.strategy = DecodeStrategy::Beam;
  o.beam_width = static_cast<int>(state.range(0));
  o.max_length = 20;
  int steps = 0;
  for (auto _ : state) {
    Decoder d(m.config, m.weights, sentence(20, false), {}, o);
    steps = d.run();
  }
  state.counters["steps"] = steps;
}
BENCHMARK(BM_BeamDecode20)->Arg(4)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "1", 0);  // one thread unless asked (read when the pool starts)
  model();  // build (and export) the weights before timing
  base_model();
  peak_flops_per_second();
  return sf::bench::run_benchmarks(argc, argv);
}
