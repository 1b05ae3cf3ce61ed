// The masked-language-model objective (BERT's): which words of a sentence the model must fill in, and the padded
// batch that asks it to.
//
// A sentence of n words is read as <bos> w1 .. wn <eos> (our [CLS] and [SEP]). Of its word positions (never
// <bos>, <eos> or <pad>) max(1, round(rate * n)) are chosen, by a shuffle (BERT's create_pretraining_data
// chooses the same count, not a coin per word: a short caption always teaches something). Each chosen position
// is then, by one uniform draw u:
//   u < mask_share                       replaced by [MASK]
//   mask_share <= u < mask_+random_share replaced by a random word (uniform over the ordinary words: no special
//                                        token, not [MASK])
//   otherwise                            kept as it is
// and the model must predict the original word there. The loss is the cross-entropy at the chosen positions
// only: the batch's target_out holds the original word at a chosen position and <pad> everywhere else, which the
// loss skips (train/loss.h).
//
// The draws of a sentence depend on (seed, epoch, the sentence's index in its corpus) alone, through a counter-
// based hash (transformer/dropout_mask.h's splitmix64): the same sentence gets the same masking whatever batch it
// lands in and however many threads run, each epoch masks differently, and a resumed run (which restarts at an
// epoch's start) masks exactly as the uninterrupted one. Validation and test use one fixed seed and epoch 0, so
// their figures are reproducible.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/vocabulary.h"
#include "train/batching.h"
#include "train/corpus.h"

namespace sf {

// The [MASK] token as the tokenizer keeps it and the vocabulary stores it.
inline constexpr const char* kMaskToken = "[MASK]";

// The masking seed of validation and test figures (`stepformer-cli eval` says it).
inline constexpr uint64_t kEvaluationMaskingSeed = 20161;

struct MaskingSettings {
  float rate = 0.15f;          // share of word positions chosen
  float mask_share = 0.8f;     // of the chosen: replaced by [MASK]
  float random_share = 0.1f;   // of the chosen: replaced by a random word (the rest kept)
  int mask_id = -1;            // [MASK]
  int vocab_size = 0;          // V: random words are drawn from the ids that are neither special nor [MASK]
  SpecialIds ids;              // pad, bos, eos, unk
  uint64_t seed = 1;
  int epoch = 0;
};

// The masking of validation and test figures for `config`'s model (the trainer's and `eval --text`'s): the default
// rate and shares, kEvaluationMaskingSeed, epoch 0, whatever the run's own --mask-rate and seed were.
MaskingSettings evaluation_masking(const Config& config);

// What masking did to one sentence.
struct MaskedSentence {
  std::vector<int> input;    // (n + 2) <bos> w'1 .. w'n <eos>: the words after masking
  std::vector<int> target;   // (n + 2) the original word at a chosen position, pad elsewhere
  int chosen = 0;            // positions chosen
};

// Masks one sentence (word ids without <bos>/<eos>); `index` is its index in the corpus. ErrorKind::Config when
// the settings are out of range (shares outside [0, 1], no [MASK] inside the vocabulary, no ordinary word).
MaskedSentence mask_sentence(const std::vector<int>& words, uint64_t index, const MaskingSettings& settings);

// The vocabulary of a masked language model: `words` (build_vocabulary's) with "[MASK]" appended as its last id.
// ErrorKind::Input when the corpus already holds "[MASK]" as a word.
Vocabulary with_mask_token(const Vocabulary& words);

// A masked language model's examples: each sentence's word ids (unknown words as <unk>) in Example::source, no
// target (masking makes it, batch by batch).
std::vector<Example> masked_lm_examples(const std::vector<TokenSequence>& sentences, const Vocabulary& vocabulary);

// A padded batch of masked sentences for an encoder-only model: source (B, S) the masked inputs, target_out
// (B, S) the originals at the chosen positions and pad elsewhere (batching.h's EncoderOnly form), target_tokens
// the chosen positions. Each example's words are in Example::source; sentences longer than max_length - 2 words
// are cut to fit (before masking).
Batch make_masked_batch(const std::vector<Example>& examples, const std::vector<int>& indices, int max_length,
                        const MaskingSettings& settings);

}  // namespace sf
