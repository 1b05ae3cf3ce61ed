// What the app does after an intervention, for the benchmarks of it: bench_interventions.cpp (CPU) and
// bench_cuda.cpp (GPU). The shipped model decodes a sentence again with the change, guessing from the translation
// before (GuidedRedecoder), and traces the final pass (AppState::rebuild in app/gui).
#pragma once
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda_model.h"
#include "decode/decoder.h"
#include "decode/guided.h"
#include "model/model.h"
#include "model/tokenizer.h"

namespace sf::bench {

// <bos> ... <eos>: the example (13 tokens), or long_sentence: <bos>, 238 words and punctuation, <eos> (the
// shipped model reads 256).
inline std::vector<int> shipped_sentence(const Model& m, bool long_sentence) {
  std::string text = "Ein Mann in einem orangefarbenen Hemd steht auf der Straße.";
  if (!long_sentence) return token_ids(encode(text, m.tokenizer, m.src_vocab, Side::Source));
  const std::string clauses[] = {" Zwei Hunde spielen im Schnee,", " eine Frau mit einem roten Hut wartet an der Ecke,",
                                 " ein kleiner Junge läuft über den Platz,", " und drei Männer sitzen vor einem Café."};
  for (int i = 0; token_ids(encode(text, m.tokenizer, m.src_vocab, Side::Source)).size() < 240; ++i)
    text += clauses[i % 4];
  std::vector<int> ids = token_ids(encode(text, m.tokenizer, m.src_vocab, Side::Source));
  ids.resize(239);
  ids.push_back(m.config.eos_id);
  return ids;
}

// The state before the change: the app's decode options for `src`, the translation as trained (the guess) and
// its encoder pass (shared by a change past the encoder).
class AppRecompute {
 public:
  AppRecompute(const Model& m, std::vector<int> src) : m_(m), src_(std::move(src)) {
    options_.max_length = std::min(static_cast<int>(src_.size()) + 30, m.config.max_positions - 1);  // as the app
    Decoder before(m.config, m.weights, src_, {}, options_);
    before.run();
    previous_ = before.generated();
    encoder_ = before.encoder_pass();
  }
  // One recompute with `iv`, its steps on `gpu` when given: the new translation. `checks`, when given, gets the
  // passes its guesses were checked in and the draft tokens they fed (GuidedRedecoder::checks, rows_fed).
  std::vector<int> run(const Interventions& iv, const std::shared_ptr<CudaModel>& gpu = nullptr,
                       std::pair<int, int>* checks = nullptr) const {
    Decoder d(m_.config, m_.weights, src_, iv, options_, encoder_);
    if (gpu) d.compute_on(gpu);
    GuidedRedecoder redecoder(d);
    redecoder.run(previous_);
    if (checks) *checks = {redecoder.checks(), redecoder.rows_fed()};
    Trace t = d.trace();
    benchmark::DoNotOptimize(t.probs.data());
    return d.generated();
  }
  const std::vector<int>& previous() const { return previous_; }

 private:
  const Model& m_;
  std::vector<int> src_;
  DecodeOptions options_;
  std::vector<int> previous_;
  std::shared_ptr<const Trace> encoder_;
};

}  // namespace sf::bench
