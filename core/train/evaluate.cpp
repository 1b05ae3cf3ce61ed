#include "train/evaluate.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "decode/decoder.h"
#include "train/batched_model.h"
#include "train/batching.h"
#include "train/corpus.h"
#include "train/masking.h"
#include "util/error.h"
#include "util/parallel.h"

namespace sf {

std::vector<int> source_ids(const Config& config, const Vocabulary& src_vocab, const TokenSequence& source) {
  std::vector<int> ids;
  if (config.bos_id != config.pad_id) ids.push_back(config.bos_id);
  for (int id : to_ids(source, src_vocab)) {
    if (static_cast<int>(ids.size()) + 1 >= config.max_positions) break;
    ids.push_back(id);
  }
  ids.push_back(config.eos_id);
  return ids;
}

TokenSequence translate_tokens(const Config& config, const ModelWeights& weights, const Vocabulary& src_vocab,
                               const Vocabulary& tgt_vocab, const TokenSequence& source,
                               const TranslateSettings& settings) {
  const std::vector<int> ids = source_ids(config, src_vocab, source);
  DecodeOptions options;
  options.strategy = settings.beam_width > 1 ? DecodeStrategy::Beam : DecodeStrategy::Greedy;
  options.beam_width = std::max(1, settings.beam_width);
  options.length_penalty = settings.length_penalty;
  options.max_length = settings.max_length > 0 ? settings.max_length
                                               : std::min<int>(static_cast<int>(source.size()) + 50,
                                                               config.max_positions - 1);
  if (config.bos_id == config.pad_id) options.never_generate = {config.pad_id};  // Marian: never its start token
  if (settings.generation) apply_generation_rules(*settings.generation, options);
  Decoder decoder(config, weights, ids, {}, options);
  if (settings.gpu) decoder.compute_on(*settings.gpu);
  decoder.run();
  TokenSequence out;
  for (int id : decoder.generated()) {
    if (id == config.eos_id) break;
    out.push_back(tgt_vocab.token(id));
  }
  return out;
}

std::vector<TokenSequence> translate_corpus(const Config& config, const ModelWeights& weights,
                                            const Vocabulary& src_vocab, const Vocabulary& tgt_vocab,
                                            const std::vector<TokenSequence>& sources,
                                            const TranslateSettings& settings) {
  std::vector<TokenSequence> out(sources.size());
  if (settings.gpu) {  // one GPU, one pass at a time
    for (size_t i = 0; i < sources.size(); ++i)
      out[i] = translate_tokens(config, weights, src_vocab, tgt_vocab, sources[i], settings);
    return out;
  }
  std::vector<std::exception_ptr> errors(sources.size());
  // Sentences are independent: a few at a time on each of the pool's threads (util/parallel.h; the loops inside a
  // translation then run on the thread that took it). The first sentence that failed is reported.
  parallel_for(static_cast<int>(sources.size()), 4, [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      try {
        out[static_cast<size_t>(i)] = translate_tokens(config, weights, src_vocab, tgt_vocab, sources[static_cast<size_t>(i)], settings);
      } catch (...) {
        errors[static_cast<size_t>(i)] = std::current_exception();
      }
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

// A SentencePiece model's corpus: each line as read (words split at spaces) is joined again and split by the
// model's own tokenizer, the pieces kept as the sentence's tokens (ids through the vocabulary, as encode_text).
std::vector<TokenSequence> pieces_of(const Model& model, const std::vector<TokenSequence>& lines, Side side) {
  std::vector<TokenSequence> out;
  out.reserve(lines.size());
  // (words_bpe: the lines are the word-level rules' tokens already, "&apos;s" and all: split into pieces as they
  // are, not tokenized again)
  const bool tokenized = model.tokenizer.kind == "words_bpe";
  if (tokenized && !model.sentencepiece)
    fail(ErrorKind::Config, "pieces_of", "the model's tokenizer is words_bpe but it has no SentencePiece model");
  for (const TokenSequence& words : lines) {
    std::string text;
    for (const std::string& w : words) text += (text.empty() ? "" : " ") + w;
    TokenSequence pieces;
    if (tokenized)
      for (const Piece& p : model.sentencepiece->split(text, side)) pieces.push_back(p.piece);
    else
      for (const Token& t : encode_text(model, text, side, /*specials=*/false)) pieces.push_back(t.text);
    out.push_back(std::move(pieces));
  }
  return out;
}

// Translations in pieces, as text split at spaces: what BLEU compares with the raw references' words.
std::vector<TokenSequence> words_of(const Model& model, const std::vector<TokenSequence>& pieces) {
  std::vector<TokenSequence> out;
  out.reserve(pieces.size());
  for (const TokenSequence& p : pieces) {
    const std::string text = decode_text(model, p, Side::Target);
    TokenSequence words;
    for (size_t at = 0; at < text.size();) {
      const size_t start = text.find_first_not_of(" \t", at);
      if (start == std::string::npos) break;
      const size_t end = std::min(text.find_first_of(" \t", start), text.size());
      words.push_back(text.substr(start, end - start));
      at = end;
    }
    out.push_back(std::move(words));
  }
  return out;
}

// Translations of `sources` (tokens, or a SentencePiece model's pieces) by greedy or beam search, as BLEU reads
// them: tokens, or words of the detokenized text.
std::vector<TokenSequence> translations_for_bleu(const Model& model, const ModelWeights& weights,
                                                 const std::vector<TokenSequence>& sources, TranslateSettings how) {
  how.generation = &model.generation;
  auto out = translate_corpus(model.config, weights, model.src_vocab, model.tgt_vocab, sources, how);
  if (model.tokenizer.kind == "words_bpe") {  // the pieces' words, tokenized as the references are
    for (TokenSequence& t : out) t = subword_words(model, t, Side::Target);
    return out;
  }
  return model.tokenizer.kind == "sentencepiece" ? words_of(model, out) : out;
}

double LikelihoodScore::perplexity() const { return std::exp(mean_nll()); }

LikelihoodScore score_likelihood(const Config& config, const ModelWeights& weights,
                                 const std::vector<Example>& examples, int batch_tokens, int max_length) {
  LikelihoodScore score;
  score.sentences = examples.size();
  const SpecialIds ids{config.pad_id, config.bos_id, config.eos_id, config.unk_id};
  BatchTrace trace;  // reused: its matrices keep their memory from batch to batch
  for (const std::vector<int>& indices : plan_batches(examples, batch_tokens, 0, 0)) {
    const Batch batch = make_batch(examples, indices, ids, max_length, config.stacks);
    // smoothing 0: r.nll is the mean of -ln p(target) over the batch's non-pad targets
    const LossResult r = batch_forward(config, weights, batch, {}, 0.0f, trace, nullptr);
    score.nll_sum += r.nll * r.tokens;
    score.tokens += r.tokens;
  }
  return score;
}

double MaskedLmScore::perplexity() const { return std::exp(mean_nll()); }

MaskedLmScore score_masked_lm(const Config& config, const ModelWeights& weights, const std::vector<Example>& examples,
                              int batch_tokens, int max_length, const MaskingSettings& masking) {
  if (config.stacks != ModelStacks::EncoderOnly || !config.has_mask_token())
    fail(ErrorKind::Unsupported, "score_masked_lm", "masked-token scores are for an encoder_only model with a mask "
                                                    "token (mask_id)");
  MaskedLmScore score;
  score.sentences = examples.size();
  BatchTrace trace;  // reused: its matrices keep their memory from batch to batch
  for (const std::vector<int>& indices : plan_batches(examples, batch_tokens, 0, 0)) {
    const Batch batch = make_masked_batch(examples, indices, max_length, masking);
    // smoothing 0: r.nll is the mean of -ln p(original) over the chosen positions (the non-pad targets)
    const LossResult r = batch_forward(config, weights, batch, {}, 0.0f, trace, nullptr);
    score.nll_sum += r.nll * r.tokens;
    score.tokens += r.tokens;
    for (size_t row = 0; row < batch.target_out.size(); ++row) {  // trace.logits (B*S, V), one row per position
      const int y = batch.target_out[row];
      if (y == config.pad_id) continue;
      Eigen::Index best = 0;
      trace.logits.row(static_cast<Eigen::Index>(row)).maxCoeff(&best);
      score.correct += best == y;
    }
  }
  return score;
}

}  // namespace sf
