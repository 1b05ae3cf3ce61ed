// The training benchmarks' model and batch, shared by bench_training.cpp (CPU) and bench_cuda.cpp (GPU), and
// mirrored by bench/bench_pytorch_training.py: the tutorials' model size (d_model 256, 8 heads, 3+3 layers, d_ff
// 512) with Multi30k-sized vocabularies, and padded batches of random sentences.
#pragma once
#include <algorithm>
#include <random>
#include <vector>

#include "model/config.h"
#include "train/batching.h"

namespace sf::bench {

inline Config tutorial_config() {
  Config c;
  c.d_model = 256;
  c.n_heads = 8;
  c.n_encoder_layers = 3;
  c.n_decoder_layers = 3;
  c.d_ff = 512;
  c.src_vocab_size = 7859;
  c.tgt_vocab_size = 5921;
  c.max_positions = 256;
  c.encoder_final_norm = c.decoder_final_norm = true;  // as nn.Transformer, which the PyTorch side uses
  return c;
}

// B sentences with source and target lengths uniform in [lo, hi] (Multi30k averages about 13 words).
inline Batch random_batch(int sentences, int lo, int hi, const Config& c, uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::uniform_int_distribution<int> length(lo, hi), word(4, std::min(c.src_vocab_size, c.tgt_vocab_size) - 1);
  std::vector<Example> examples(sentences);
  std::vector<int> indices;
  for (int i = 0; i < sentences; ++i) {
    examples[i].source.resize(length(rng));
    examples[i].target.resize(length(rng));
    for (int& w : examples[i].source) w = word(rng);
    for (int& w : examples[i].target) w = word(rng);
    indices.push_back(i);
  }
  return make_batch(examples, indices, SpecialIds{c.pad_id, c.bos_id, c.eos_id, c.unk_id}, c.max_positions);
}

}  // namespace sf::bench
