// What the GUI does on every intervention, on the shipped model: decode the example sentence greedily with the
// change (after checking the previous translation in one batched pass), then trace the final pass
// (AppState::recompute in app/gui). The figure to compare with a frame (16.7 ms at 60 Hz); the frame's drawing
// comes on top (bench/bench_frames.sh measures both in the app). Threads: OMP_NUM_THREADS (util/parallel.h),
// else the machine's cores, as in the app.
//
//   recompute/<intervention>/1   none, enc_head_off, dec_head_off, cross_head_off, causal_off, padding_off,
//                                positions_off, enc_mask, dec_mask (blocks one more cell: the KV cache holds),
//                                dec_mask_future (lets a query see a later key: no KV cache, each step
//                                recomputes the prefix); /1 with the linear layers reading the
//                                weights as halves (the shipped model is stored as F16), /0 as floats
//   recompute_long/<intervention>/1  the same on a 240-token sentence (the shipped model reads 256): the
//                                case that must stay live (at most 60 ms on two threads)
//   BM_Step                       one decoding step (Space) with its trace
//
// The model file: STEPFORMER_BENCH_MODEL or assets/models/de-en.safetensors.
#include <benchmark/benchmark.h>


#include <algorithm>
#include <cstdlib>
#include <memory>

#include "bench_main.h"
#include "decode/decoder.h"
#include "decode/guided.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "app_recompute.h"
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

// The same weights read as floats: packed as floats, not halves (LinearWeights::packed).
const Model& shipped_floats() {
  static const Model model = [] {
    Model m = shipped();
    attach_packed_weights(m.weights, false);
    return m;
  }();
  return model;
}

std::vector<int> source_ids(bool long_sentence = false) { return bench::shipped_sentence(shipped(), long_sentence); }

// As AppState::recompute: the previous translation (the model as trained) is checked in one batched pass
// (GuidedRedecoder::prefill), then decoding goes on from the first token that differs, guessing the rest from
// the previous translation and checking each guess in one pass (GuidedRedecoder::run).
void recompute_on(benchmark::State& state, Interventions iv, bool long_sentence) {
  const Model& m = state.range(0) ? shipped() : shipped_floats();
  const bench::AppRecompute before(m, source_ids(long_sentence));
  const std::vector<int>& previous = before.previous();
  size_t tokens = 0;
  int kept = 0;
  std::pair<int, int> checks;
  for (auto _ : state) {
    const std::vector<int> generated = before.run(iv, nullptr, &checks);
    tokens = generated.size();
    kept = 0;  // tokens the new translation shares with the previous one, position by position
    for (size_t i = 0; i < std::min(tokens, previous.size()); ++i) kept += generated[i] == previous[i];
  }
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["same"] = kept;
  state.counters["checks"] = checks.first;  // passes that checked guesses, and the draft tokens they fed
  state.counters["fed"] = checks.second;
  state.SetLabel(state.range(0) ? "weights as halves" : "weights as floats");
}
void recompute(benchmark::State& state, Interventions iv) { recompute_on(state, std::move(iv), false); }
void recompute_long(benchmark::State& state, Interventions iv) { recompute_on(state, std::move(iv), true); }

Interventions with(void (*change)(Interventions&)) {
  Interventions iv;
  change(iv);
  return iv;
}

const int kS = 13;  // the example sentence: <bos> + 11 words + <eos>

BENCHMARK_CAPTURE(recompute, none, Interventions{})->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, enc_head_off, with([](Interventions& iv) { iv.heads_off = {{AttentionKind::Encoder, 0, 3}}; }))
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, dec_head_off, with([](Interventions& iv) { iv.heads_off = {{AttentionKind::Decoder, 1, 2}}; }))
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, cross_head_off, with([](Interventions& iv) { iv.heads_off = {{AttentionKind::Cross, 2, 5}}; }))
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, causal_off, with([](Interventions& iv) { iv.causal_mask = false; }))
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, padding_off, with([](Interventions& iv) { iv.padding_mask = false; }))
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, positions_off, with([](Interventions& iv) { iv.positional_encoding = false; }))
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, enc_mask, with([](Interventions& iv) {
                    Mat blocked = Mat::Zero(kS, kS);
                    blocked(3, 2) = 1.0f;
                    iv.custom_masks = {{{AttentionKind::Encoder, 1, 0}, blocked}};
                  }))
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(recompute, dec_mask, with([](Interventions& iv) {
                    Mat blocked = Mat::Zero(13, 13);  // painted on a 13-position pass, fitted to every prefix
                    for (int i = 0; i < 13; ++i)
                      for (int j = i + 1; j < 13; ++j) blocked(i, j) = 1.0f;
                    blocked(5, 1) = 1.0f;
                    iv.custom_masks = {{{AttentionKind::Decoder, 0, 0}, blocked}};
                  }))
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(recompute, dec_mask_future, with([](Interventions& iv) {
                    Mat blocked = Mat::Zero(13, 13);  // causal but for one cell: query 1 may see key 5
                    for (int i = 0; i < 13; ++i)
                      for (int j = i + 1; j < 13; ++j) blocked(i, j) = 1.0f;
                    blocked(1, 5) = 0.0f;
                    iv.custom_masks = {{{AttentionKind::Decoder, 0, 0}, blocked}};
                  }))
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// The long sentence: a head off in each kind, the causal mask off (no KV cache), positions off (everything).
BENCHMARK_CAPTURE(recompute_long, none, Interventions{})->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(recompute_long, enc_head_off,
                  with([](Interventions& iv) { iv.heads_off = {{AttentionKind::Encoder, 0, 3}}; }))
    ->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(recompute_long, dec_head_off,
                  with([](Interventions& iv) { iv.heads_off = {{AttentionKind::Decoder, 1, 2}}; }))
    ->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(recompute_long, cross_head_off,
                  with([](Interventions& iv) { iv.heads_off = {{AttentionKind::Cross, 2, 5}}; }))
    ->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(recompute_long, positions_off, with([](Interventions& iv) { iv.positional_encoding = false; }))
    ->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

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

int main(int argc, char** argv) {
  return sf::bench::run_benchmarks(argc, argv);
}
