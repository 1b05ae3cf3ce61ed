// Translating a corpus and scoring it: what `stepformer-cli eval`, the trainer's validation and the README's
// BLEU figures use.
#pragma once
#include <string>
#include <vector>

#include "model/model.h"
#include "train/bleu.h"
#include "train/corpus.h"
#include "train/masking.h"

namespace sf {

class CudaModel;  // backend/cuda_model.h

struct TranslateSettings {
  int beam_width = 1;            // 1: greedy
  float length_penalty = 0.6f;   // beam search (GNMT alpha)
  int max_length = 0;            // generated tokens; 0: source length + 50, capped by max_positions
  const GenerationDefaults* generation = nullptr;  // a model's own decoding rules (Marian's): bad words, beams
  // Decode on this GPU (Decoder::compute_on; it must hold these weights): the sentences one after another, each
  // step one pass of its hypotheses there. A CUDA failure throws ErrorKind::Unsupported.
  CudaModel* gpu = nullptr;
};

// The encoder's input for a tokenized sentence: <bos> tokens <eos> (Marian, bos == pad: tokens </s>, as
// make_batch), cut to what the model's positions allow; unknown tokens become <unk>.
std::vector<int> source_ids(const Config& config, const Vocabulary& src_vocab, const TokenSequence& source);

// Translates one tokenized source sentence (tokens as in the vocabulary; unknown words become <unk>).
// Returns the target tokens, without <bos>/<eos>.
TokenSequence translate_tokens(const Config& config, const ModelWeights& weights, const Vocabulary& src_vocab,
                               const Vocabulary& tgt_vocab, const TokenSequence& source,
                               const TranslateSettings& settings);

// Translates every sentence (in parallel over the cores, each sentence on one; with settings.gpu in turn there).
std::vector<TokenSequence> translate_corpus(const Config& config, const ModelWeights& weights,
                                            const Vocabulary& src_vocab, const Vocabulary& tgt_vocab,
                                            const std::vector<TokenSequence>& sources,
                                            const TranslateSettings& settings);

// A SentencePiece model's corpus (model/sentencepiece.h): each line as read (words split at spaces) joined again
// and split by the model's own tokenizer; the pieces are the sentence's tokens (ids through the vocabulary, as
// encode_text). A words_bpe model's lines are tokenized words already: each split into its pieces as it is.
std::vector<TokenSequence> pieces_of(const Model& model, const std::vector<TokenSequence>& lines, Side side);
// Translations in pieces as text split at spaces: what BLEU compares with raw references' words.
std::vector<TokenSequence> words_of(const Model& model, const std::vector<TokenSequence>& pieces);
// translate_corpus with the model's own decoding rules, as BLEU reads the result: tokens, (SentencePiece) the
// words of the detokenized text, or (words_bpe) the words the pieces make, tokenized as the references.
std::vector<TokenSequence> translations_for_bleu(const Model& model, const ModelWeights& weights,
                                                 const std::vector<TokenSequence>& sources, TranslateSettings how);

// [SECTION] likelihood: what a model gives the very tokens of a corpus (teacher forcing, no sampling)
//
// For each example the model reads <bos> y1 .. yn (with a source for an encoder-decoder model) and is scored on
// predicting y1 .. yn <eos>: every token and the sentence's end, an <unk> target as the <unk> token itself.
//   nll_sum    = - sum over those predictions of ln p(y_t | <bos> y_<t)            (nats)
//   perplexity = exp(nll_sum / tokens)
// For a decoder-only model over a word vocabulary this per-token perplexity is the per-word perplexity (each
// word a token, plus one <eos> per sentence).
struct LikelihoodScore {
  double nll_sum = 0;   // nats
  long tokens = 0;      // predictions scored: the examples' target tokens plus one <eos> each
  size_t sentences = 0;
  double mean_nll() const { return tokens ? nll_sum / static_cast<double>(tokens) : 0.0; }
  double perplexity() const;  // exp(mean_nll())
};

// Scores `examples` (ids in the model's vocabularies, train/corpus.h) in padded batches of about batch_tokens
// (train/batching.h, cut at max_length as training cuts them), dropout off, no label smoothing; each batch's
// matrix products on the pool's threads, the sums in a fixed order (the same score on any thread count).
LikelihoodScore score_likelihood(const Config& config, const ModelWeights& weights,
                                 const std::vector<Example>& examples, int batch_tokens, int max_length);

// [SECTION] masked-token scores: how well an encoder-only model fills in the words masking hid (train/masking.h)
//
// Each sentence (its words in Example::source) is masked as in training, with `masking` (a fixed seed and epoch
// for reproducible figures: kEvaluationMaskingSeed, epoch 0), and the model reads it whole, dropout off. Over the
// chosen positions (80% [MASK], 10% a random word, 10% kept, as training):
//   accuracy   = share of chosen positions where argmax_v p(v | the masked sentence) is the original word
//   nll_sum    = - sum of ln p(original word | the masked sentence)                       (nats)
//   perplexity = exp(nll_sum / tokens)
struct MaskedLmScore {
  double nll_sum = 0;   // nats
  long tokens = 0;      // chosen positions scored
  long correct = 0;     // of them, where the most probable token is the original word
  size_t sentences = 0;
  double mean_nll() const { return tokens ? nll_sum / static_cast<double>(tokens) : 0.0; }
  double perplexity() const;  // exp(mean_nll())
  double accuracy() const { return tokens ? static_cast<double>(correct) / static_cast<double>(tokens) : 0.0; }
};

// Scores `examples` in padded batches of about batch_tokens (cut at max_length as training cuts them); the sums
// in a fixed order (the same score on any thread count). ErrorKind::Unsupported for a model that is not
// encoder-only or has no mask token.
MaskedLmScore score_masked_lm(const Config& config, const ModelWeights& weights, const std::vector<Example>& examples,
                              int batch_tokens, int max_length, const MaskingSettings& masking);

}  // namespace sf
