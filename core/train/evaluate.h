// Translating a corpus and scoring it: what `stepformer-cli eval`, the trainer's validation and the README's
// BLEU figures use.
#pragma once
#include <string>
#include <vector>

#include "model/model.h"
#include "train/bleu.h"

namespace sf {

struct TranslateSettings {
  int beam_width = 1;            // 1: greedy
  float length_penalty = 0.6f;   // beam search (GNMT alpha)
  int max_length = 0;            // generated tokens; 0: source length + 50, capped by max_positions
};

// Translates one tokenized source sentence (tokens as in the vocabulary; unknown words become <unk>).
// Returns the target tokens, without <bos>/<eos>.
TokenSequence translate_tokens(const Config& config, const ModelWeights& weights, const Vocabulary& src_vocab,
                               const Vocabulary& tgt_vocab, const TokenSequence& source,
                               const TranslateSettings& settings);

// Translates every sentence (in parallel over the cores, each sentence on one).
std::vector<TokenSequence> translate_corpus(const Config& config, const ModelWeights& weights,
                                            const Vocabulary& src_vocab, const Vocabulary& tgt_vocab,
                                            const std::vector<TokenSequence>& sources,
                                            const TranslateSettings& settings);

}  // namespace sf
