// What the GUI does on every intervention, on the shipped model: decode the example sentence greedily with the
// change (after checking the previous translation in one batched pass), then trace the final pass
// (AppState::recompute in app/gui). The figure to compare with a frame
// (16.7 ms at 60 Hz). One thread (Eigen single-threaded), as the app's frame thread.
//
//   BM_Recompute/<intervention>   none, enc-head-off, dec-head-off, cross-head-off, causal-off, padding-off,
//                                 positions-off, enc-mask, dec-mask
//   BM_Step                       one decoding step (Space) with its trace
//
// The model file: STEPFORMER_BENCH_MODEL or assets/models/de-en.safetensors.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "decode/decoder.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "util/paths.h"

namespace {

using namespace sf;

const Model& shipped() {
  static const Model model = [] {
    const char* path = std::getenv("STEPFORMER_BENCH_MODEL");
    return load_model(path ? path : shipped_model_path("de-en"));
  }();
  return model;
}

std::vector<int> source_ids() {
  const Model& m = shipped();
  return token_ids(encode("Ein Mann in einem orangefarbenen Hemd steht auf der Straße.", m.tokenizer, m.src_vocab,
                          Side::Source));
}

// As AppState::recompute: the previous translation (the model as trained) is checked in one batched pass
// (Decoder::prefill), then decoding goes on from the first token that differs, guessing the rest from the
// previous translation and checking each guess in one pass (Decoder::run_guided).
void recompute(benchmark::State& state, Interventions iv) {
  const Model& m = shipped();
  const std::vector<int> src = source_ids();
  DecodeOptions o;
  o.max_length = static_cast<int>(src.size()) + 30;
  Decoder before(m.config, m.weights, src, {}, o);
  before.run();
  const std::vector<int> previous = before.generated();
  size_t tokens = 0;
  int kept = 0;
  for (auto _ : state) {
    Decoder d(m.config, m.weights, src, iv, o);
    d.run_guided(previous);
    Trace t = d.trace();
    benchmark::DoNotOptimize(t.probs.data());
    tokens = d.generated().size();
    kept = 0;  // tokens the new translation shares with the previous one, position by position
    for (size_t i = 0; i < std::min(tokens, previous.size()); ++i) kept += d.generated()[i] == previous[i];
  }
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["same"] = kept;
}

Interventions with(void (*change)(Interventions&)) {
  Interventions iv;
  change(iv);
  return iv;
}

const int kS = 13;  // the example sentence: <bos> + 11 words + <eos>

BENCHMARK_CAPTURE(recompute, none, Interventions{})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, enc_head_off, with([](Interventions& iv) { iv.heads_off = {{AttentionKind::Encoder, 0, 3}}; }))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, dec_head_off, with([](Interventions& iv) { iv.heads_off = {{AttentionKind::Decoder, 1, 2}}; }))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, cross_head_off, with([](Interventions& iv) { iv.heads_off = {{AttentionKind::Cross, 2, 5}}; }))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, causal_off, with([](Interventions& iv) { iv.causal_mask = false; }))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, padding_off, with([](Interventions& iv) { iv.padding_mask = false; }))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, positions_off, with([](Interventions& iv) { iv.positional_encoding = false; }))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, enc_mask, with([](Interventions& iv) {
                    Mat blocked = Mat::Zero(kS, kS);
                    blocked(3, 2) = 1.0f;
                    iv.custom_masks = {{{AttentionKind::Encoder, 1, 0}, blocked}};
                  }))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, dec_mask, with([](Interventions& iv) {
                    Mat blocked = Mat::Zero(13, 13);  // painted on a 13-position pass, fitted to every prefix
                    for (int i = 0; i < 13; ++i)
                      for (int j = i + 1; j < 13; ++j) blocked(i, j) = 1.0f;
                    blocked(5, 1) = 1.0f;
                    iv.custom_masks = {{{AttentionKind::Decoder, 0, 0}, blocked}};
                  }))
    ->Unit(benchmark::kMillisecond);

void BM_Step(benchmark::State& state) {
  const Model& m = shipped();
  const std::vector<int> src = source_ids();
  DecodeOptions o;
  o.max_length = static_cast<int>(src.size()) + 30;
  Decoder d(m.config, m.weights, src, {}, o);
  for (int i = 0; i < 6; ++i) d.step();
  for (auto _ : state) {
    d.step();
    Trace t = d.trace();
    benchmark::DoNotOptimize(t.probs.data());
    d.step_back();
  }
}
BENCHMARK(BM_Step)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
