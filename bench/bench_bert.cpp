// BERT-base's size (110 M parameters: d_model 768, 12 layers x 12 heads, d_ff 3072, 30,522 tokens, 512 positions,
// 2 token types), random weights, family "bert" (post-norm, learned positions and token types, the embedding norm,
// the erf GELU, the masked-LM head tied to the word embedding), on OMP_NUM_THREADS threads of the pool (default
// 1). The PyTorch side is bench/bench_pytorch_bert.py, on the same weights (STEPFORMER_BENCH_BERT=PATH writes
// them as a model file with BERT's own tensor names).
//   BM_BertForwardLogits/N  what BertForMaskedLM's forward computes: the logits (N, V) of N tokens, keeping only
//                           what the next layer reads (Record::Output): the comparison with PyTorch
//   BM_BertForwardTrace/N   the traced pass the app shows (every intermediate kept, probabilities included)
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "bench_main.h"
#include "model/model.h"
#include "model/name_tables.h"
#include "transformer/forward.h"
#include "transformer/passes.h"
#include "util/parallel.h"

namespace {

using namespace sf;

constexpr int kVocabulary = 30522;

Config bert_base() {
  Config c;
  c.stacks = ModelStacks::EncoderOnly;
  c.d_model = 768;
  c.n_heads = 12;
  c.n_encoder_layers = 12;
  c.n_decoder_layers = 0;
  c.d_ff = 3072;
  c.src_vocab_size = kVocabulary;
  c.tgt_vocab_size = 0;
  c.max_positions = 512;
  c.type_vocab_size = 2;
  c.embedding_norm = true;
  c.positional_encoding = PositionalEncoding::Learned;
  c.embedding_scale = EmbeddingScale::One;
  c.norm_placement = NormPlacement::Post;
  c.encoder_final_norm = c.decoder_final_norm = false;
  c.activation = Activation::GELU;
  c.layer_norm_eps = 1e-12f;
  c.output_head = OutputHead::MaskedLM;
  c.output_bias = true;
  c.tie_output_embedding = true;
  // bert-base-uncased's ids: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103
  c.pad_id = 0;
  c.unk_id = 100;
  c.bos_id = 101;
  c.eos_id = 102;
  c.mask_id = 103;
  return c;
}

struct BertBench {
  Model m;
  BertBench() {
    m.family = kFamilyBert;
    m.config = bert_base();
    bench::fill_hub_random_weights(m, 110);  // (BERT's initialisation, bench_main.h)
    if (const char* path = std::getenv("STEPFORMER_BENCH_BERT")) {
      // A vocabulary of the right size with bert-base-uncased's special tokens at their ids, fillers elsewhere.
      std::vector<std::string> tokens;
      for (int i = 0; i < kVocabulary; ++i) tokens.push_back("[unused" + std::to_string(i) + "]");
      tokens[0] = "[PAD]";
      tokens[100] = "[UNK]";
      tokens[101] = "[CLS]";
      tokens[102] = "[SEP]";
      tokens[103] = "[MASK]";
      m.src_vocab = Vocabulary(tokens, SpecialIds{0, 101, 102, 100});  // pad, bos ([CLS]), eos ([SEP]), unk
      save_model(m, path);
    }
  }
};

const BertBench& bench_model() {
  static const BertBench b;
  return b;
}

// Token ids, the same on both sides: [CLS], then id = 1000 + (7919 * i + 13) % 29000, [SEP] last.
std::vector<int> tokens(int n) {
  std::vector<int> ids{101};
  for (int i = 1; i + 1 < n; ++i) ids.push_back(1000 + (7919 * i + 13) % 29000);
  ids.push_back(102);
  return ids;
}

void BM_BertForwardLogits(benchmark::State& state) {
  const Model& m = bench_model().m;
  Trace t;
  t.src.ids = tokens(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    encoder_pass(m.config, m.weights, 1, -1, Record::Output, nullptr, t);  // logits (N, V) in t.logits
    benchmark::DoNotOptimize(t.logits.data());
  }
  state.counters["tokens"] = static_cast<double>(state.range(0));
  state.counters["threads"] = parallel_threads();
}
BENCHMARK(BM_BertForwardLogits)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(256)->Arg(512)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_BertForwardTrace(benchmark::State& state) {
  const Model& m = bench_model().m;
  const std::vector<int> ids = tokens(static_cast<int>(state.range(0)));
  Trace t;
  for (auto _ : state) {
    forward(m.config, m.weights, ids, {}, {}, t);
    benchmark::DoNotOptimize(t.probs.data());
  }
}
BENCHMARK(BM_BertForwardTrace)->Arg(8)->Arg(32)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "1", 0);  // one thread unless asked (read when the pool starts)
  bench_model();  // build (and export) the weights before timing
  return sf::bench::run_benchmarks(argc, argv);
}
