// Padded batches for training. Sentences of similar length go together (few pads), a batch holds about
// `max_tokens` target tokens, and the batch order is shuffled from a seed, so an epoch is reproducible.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "train/corpus.h"

namespace sf {

struct Batch {
  int size = 0;                // B sentences
  int source_length = 0;       // S: longest source + 2 (<bos>, <eos>; + 1 when bos == pad, Marian)
  int target_length = 0;       // T: longest target + 1
  std::vector<int> source;     // (B, S) <bos> x <eos> (Marian: x <eos>), then <pad>
  std::vector<int> target_in;  // (B, T) <bos> y, then <pad>: the decoder input (teacher forcing)
  std::vector<int> target_out; // (B, T) y <eos>, then <pad>: what each position must predict
  int target_tokens = 0;       // non-pad entries of target_out
  // The other shapes (config.stacks): a decoder-only model's batch has no source (S 0, `source` empty) and
  // learns the next token of target_in; an encoder-only model's has no decoder input (`target_in` empty) and
  // target_out (B, S), T = S, holds what each source position must predict (pad: nothing).
};

// Groups example indices into batches: sorted by length within pools of 100 batches' worth of shuffled
// examples, then the batches shuffled. Deterministic for (seed, epoch).
std::vector<std::vector<int>> plan_batches(const std::vector<Example>& examples, int max_tokens, uint64_t seed,
                                           int epoch);

// Pads the chosen examples into one batch. max_length cuts sentences that are longer (with their <eos>).
// Sources are <bos> tokens <eos>, or tokens <eos> when ids.bos == ids.pad (Marian: the decoder starts with
// <pad>, and a source never starts with a token the padding mask would hide); targets <bos> tokens -> tokens <eos>.
// `stacks` is the model's shape: EncoderDecoder as above; DecoderOnly leaves the source out (S 0, the examples'
// sources unread): a language model reads <bos> w1 .. wn and predicts w1 .. wn <eos>, every word and the end.
// EncoderOnly is refused (ErrorKind::Unsupported): its batches are masked sentences, train/masking.h.
Batch make_batch(const std::vector<Example>& examples, const std::vector<int>& indices, const SpecialIds& ids,
                 int max_length, ModelStacks stacks = ModelStacks::EncoderDecoder);

}  // namespace sf
