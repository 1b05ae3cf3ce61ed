// GPT-2 small's size (124 M parameters: d_model 768, 12 layers x 12 heads, d_ff 3072, 50,257 tokens, 1,024
// positions), random weights, family "gpt2" (pre-norm, learned positions, gelu_new, the output tied to wte), on
// OMP_NUM_THREADS threads of the pool (default 1). The PyTorch side is bench/bench_pytorch_gpt2.py, on the same
// weights (STEPFORMER_BENCH_GPT2=PATH writes them as a model file with GPT-2's own tensor names).
//   BM_Gpt2ForwardLogits/N  what GPT2LMHeadModel's forward computes: the logits (N, V) of N tokens, keeping only
//                           what the next layer reads (Record::Output): the comparison with PyTorch
//   BM_Gpt2ForwardTrace/N   the traced pass the app shows (every intermediate kept, probabilities included)
//   BM_Gpt2KvStep/N         one token's logits after N - 1 tokens of context held in the KV cache
//   BM_Gpt2HeadSwitch/N     the app's recompute after one head of the last layer is switched off, on the traced
//                           pass of N tokens (transformer/forward.h recompute: only the layers after the change)
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "bench_main.h"
#include "decode/kv_cache.h"
#include "model/model.h"
#include "model/name_tables.h"
#include "transformer/forward.h"
#include "transformer/passes.h"
#include "util/parallel.h"

namespace {

using namespace sf;

Config gpt2_small() {
  Config c;
  c.stacks = ModelStacks::DecoderOnly;
  c.d_model = 768;
  c.n_heads = 12;
  c.n_encoder_layers = 0;
  c.n_decoder_layers = 12;
  c.d_ff = 3072;
  c.src_vocab_size = 0;
  c.tgt_vocab_size = 50257;
  c.max_positions = 1024;
  c.positional_encoding = PositionalEncoding::Learned;
  c.embedding_scale = EmbeddingScale::One;
  c.norm_placement = NormPlacement::Pre;
  c.decoder_final_norm = true;
  c.activation = Activation::GELUTanh;
  c.output_bias = false;
  c.tie_output_embedding = true;
  c.starts_with_bos = false;
  c.bos_id = c.eos_id = c.pad_id = c.unk_id = 50256;
  return c;
}

struct Gpt2Bench {
  Model m;
  Gpt2Bench() {
    m.family = kFamilyGpt2;
    m.config = gpt2_small();
    bench::fill_hub_random_weights(m, 124);  // (GPT-2's initialisation, bench_main.h)
    if (const char* path = std::getenv("STEPFORMER_BENCH_GPT2")) {
      // A byte-level vocabulary of the right size: the 256 byte pieces, fillers, <|endoftext|> last.
      std::vector<std::string> pieces;
      for (int b = 0; b < 256; ++b) pieces.push_back(ByteBpe::byte_piece(static_cast<unsigned char>(b)));
      for (int i = 256; i < 50256; ++i) pieces.push_back("<filler " + std::to_string(i) + ">");
      pieces.push_back("<|endoftext|>");
      m.byte_bpe = std::make_shared<const ByteBpe>(ByteBpe::from_pieces(pieces, "#version: 0.2\n", "bench"));
      m.tgt_vocab = Vocabulary(pieces, SpecialIds{50256, 50256, 50256, 50256});
      m.tokenizer.kind = "byte_bpe";
      m.tokenizer.add_bos_eos = false;
      save_model(m, path);
    }
  }
};

const Gpt2Bench& bench_model() {
  static const Gpt2Bench b;
  return b;
}

// Token ids, the same on both sides: id = (7919 * i + 13) % 50000.
std::vector<int> tokens(int n) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back((7919 * i + 13) % 50000);
  return ids;
}

void BM_Gpt2ForwardLogits(benchmark::State& state) {
  const Model& m = bench_model().m;
  const int n = static_cast<int>(state.range(0));
  const Trace none;  // no encoder pass
  DecoderPass pass;
  pass.rows = DecoderRows::one_sequence(tokens(n));
  for (int i = 0; i < n; ++i) pass.output_rows.push_back(i);
  for (auto _ : state) {
    Mat logits = decoder_pass(m.config, m.weights, none, nullptr, pass);
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["tokens"] = n;
  state.counters["threads"] = parallel_threads();
}
BENCHMARK(BM_Gpt2ForwardLogits)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)->Arg(512)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Gpt2ForwardTrace(benchmark::State& state) {
  const Model& m = bench_model().m;
  const std::vector<int> ids = tokens(static_cast<int>(state.range(0)));
  Trace t;
  for (auto _ : state) {
    forward(m.config, m.weights, {}, ids, {}, t);
    benchmark::DoNotOptimize(t.probs.data());
  }
}
BENCHMARK(BM_Gpt2ForwardTrace)->Arg(8)->Arg(32)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Gpt2KvStep(benchmark::State& state) {
  const Model& m = bench_model().m;
  const int n = static_cast<int>(state.range(0));
  const std::vector<int> ids = tokens(n);
  const Trace none;
  KvCache cache = start_kv_cache(m.config, m.weights, none);
  for (int i = 0; i + 1 < n; ++i) decode_step(m.config, m.weights, none, ids[static_cast<size_t>(i)], cache);
  for (auto _ : state) {
    RowVec logits = decode_step(m.config, m.weights, none, ids.back(), cache);
    benchmark::DoNotOptimize(logits.data());
    truncate_kv_cache(cache, n - 1);
  }
}
BENCHMARK(BM_Gpt2KvStep)->Arg(8)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Gpt2HeadSwitch(benchmark::State& state) {
  const Model& m = bench_model().m;
  const std::vector<int> ids = tokens(static_cast<int>(state.range(0)));
  const Trace base = forward(m.config, m.weights, {}, ids);
  Interventions off;
  off.heads_off.push_back({AttentionKind::Decoder, m.config.n_decoder_layers - 1, 3});
  for (auto _ : state) {
    state.PauseTiming();
    Trace t = base;
    state.ResumeTiming();
    recompute(m.config, m.weights, off, t);
    benchmark::DoNotOptimize(t.probs.data());
  }
}
BENCHMARK(BM_Gpt2HeadSwitch)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "1", 0);  // one thread unless asked (read when the pool starts)
  bench_model();  // build (and export) the weights before timing
  return sf::bench::run_benchmarks(argc, argv);
}
