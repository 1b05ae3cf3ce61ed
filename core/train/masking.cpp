#include "train/masking.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "transformer/dropout_mask.h"  // splitmix64
#include "util/error.h"

namespace sf {

namespace {

// The draws of one sentence: the k-th is splitmix64(key + k), key = hash(seed, epoch, index). No generator state.
class SentenceDraws {
 public:
  SentenceDraws(uint64_t seed, int epoch, uint64_t index)
      : key_(splitmix64(splitmix64(seed) ^ splitmix64((static_cast<uint64_t>(epoch) << 32) + index))) {}
  // Uniform in [0, n): the high half of the 128-bit product (Lemire's reduction; bias below n / 2^64).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // Uniform in [0, 1) with 24 bits, as the dropout masks draw.
  float unit() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }

 private:
  uint64_t next() { return splitmix64(key_ + counter_++); }
  uint64_t key_;
  uint64_t counter_ = 0;
};

void check_settings(const MaskingSettings& s) {
  auto bad = [](const std::string& what) { fail(ErrorKind::Config, "mask_sentence", what); };
  if (!(s.rate > 0.0f && s.rate <= 1.0f)) bad("the masking rate must lie in (0, 1], got " + std::to_string(s.rate));
  if (!(s.mask_share >= 0.0f && s.random_share >= 0.0f && s.mask_share + s.random_share <= 1.0f))
    bad("the [MASK] and random-word shares must be at least 0 and sum to at most 1");
  if (s.mask_id < 0 || s.mask_id >= s.vocab_size)
    bad("the model has no [MASK] token inside its vocabulary of " + std::to_string(s.vocab_size));
}

// The ids a random replacement never takes (the special tokens and [MASK]), sorted, distinct, inside [0, V).
std::vector<int> excluded_ids(const MaskingSettings& s) {
  std::vector<int> out{s.ids.pad, s.ids.bos, s.ids.eos, s.ids.unk, s.mask_id};
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(std::remove_if(out.begin(), out.end(), [&](int id) { return id < 0 || id >= s.vocab_size; }), out.end());
  return out;
}

}  // namespace

MaskingSettings evaluation_masking(const Config& config) {
  MaskingSettings m;
  m.mask_id = config.mask_id;
  m.vocab_size = config.src_vocab_size;
  m.ids = SpecialIds{config.pad_id, config.bos_id, config.eos_id, config.unk_id};
  m.seed = kEvaluationMaskingSeed;
  m.epoch = 0;
  return m;
}

MaskedSentence mask_sentence(const std::vector<int>& words, uint64_t index, const MaskingSettings& s) {
  check_settings(s);
  const std::vector<int> excluded = excluded_ids(s);
  const int ordinary = s.vocab_size - static_cast<int>(excluded.size());
  if (ordinary <= 0) fail(ErrorKind::Config, "mask_sentence", "the vocabulary has no ordinary word to draw");
  const int n = static_cast<int>(words.size());
  MaskedSentence m;
  m.input.reserve(static_cast<size_t>(n) + 2);
  m.input.push_back(s.ids.bos);
  m.input.insert(m.input.end(), words.begin(), words.end());
  m.input.push_back(s.ids.eos);
  m.target.assign(m.input.size(), s.ids.pad);
  if (n == 0) return m;
  SentenceDraws draws(s.seed, s.epoch, index);
  // The chosen word positions (1 .. n in the input): the first `count` of a partial Fisher-Yates shuffle.
  m.chosen = std::clamp(static_cast<int>(std::lround(s.rate * static_cast<float>(n))), 1, n);
  std::vector<int> positions(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) positions[static_cast<size_t>(i)] = i + 1;
  for (int i = 0; i < m.chosen; ++i) {
    const int j = i + static_cast<int>(draws.below(static_cast<uint64_t>(n - i)));
    std::swap(positions[static_cast<size_t>(i)], positions[static_cast<size_t>(j)]);
  }
  for (int i = 0; i < m.chosen; ++i) {
    const size_t p = static_cast<size_t>(positions[static_cast<size_t>(i)]);
    m.target[p] = m.input[p];
    const float u = draws.unit();
    if (u < s.mask_share) {
      m.input[p] = s.mask_id;
    } else if (u < s.mask_share + s.random_share) {
      // The k-th ordinary id: k, stepped past each excluded id at or below it (excluded is sorted).
      int id = static_cast<int>(draws.below(static_cast<uint64_t>(ordinary)));
      for (int e : excluded)
        if (id >= e) ++id;
      m.input[p] = id;
    }
  }
  return m;
}

Vocabulary with_mask_token(const Vocabulary& words) {
  if (words.find(kMaskToken))
    fail(ErrorKind::Input, "with_mask_token",
         std::string("the corpus holds the word \"") + kMaskToken + "\", which a masked language model keeps for its "
         "mask token");
  std::vector<std::string> tokens = words.tokens();
  tokens.emplace_back(kMaskToken);
  return Vocabulary(std::move(tokens), words.specials(), "with_mask_token");
}

std::vector<Example> masked_lm_examples(const std::vector<TokenSequence>& sentences, const Vocabulary& vocabulary) {
  std::vector<Example> examples(sentences.size());
  for (size_t i = 0; i < examples.size(); ++i) examples[i].source = to_ids(sentences[i], vocabulary);
  return examples;
}

Batch make_masked_batch(const std::vector<Example>& examples, const std::vector<int>& indices, int max_length,
                        const MaskingSettings& settings) {
  if (indices.empty()) fail(ErrorKind::Input, "make_masked_batch", "no sentences in the batch");
  if (max_length < 3) fail(ErrorKind::Input, "make_masked_batch", "max_length must leave room for a word");
  Batch b;
  b.size = static_cast<int>(indices.size());
  std::vector<MaskedSentence> rows;
  rows.reserve(indices.size());
  for (int i : indices) {
    if (i < 0 || static_cast<size_t>(i) >= examples.size())
      fail(ErrorKind::Input, "make_masked_batch", "example " + std::to_string(i) + " is outside the corpus");
    const std::vector<int>& words = examples[static_cast<size_t>(i)].source;
    const size_t kept = std::min(words.size(), static_cast<size_t>(max_length - 2));
    rows.push_back(mask_sentence(std::vector<int>(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(kept)),
                                 static_cast<uint64_t>(i), settings));
    b.source_length = std::max(b.source_length, static_cast<int>(rows.back().input.size()));
  }
  b.target_length = b.source_length;  // an encoder-only model's targets: one per source position
  b.source.assign(static_cast<size_t>(b.size) * b.source_length, settings.ids.pad);
  b.target_out.assign(b.source.size(), settings.ids.pad);
  for (int row = 0; row < b.size; ++row) {
    const MaskedSentence& m = rows[static_cast<size_t>(row)];
    const size_t at = static_cast<size_t>(row) * b.source_length;
    std::copy(m.input.begin(), m.input.end(), b.source.begin() + static_cast<std::ptrdiff_t>(at));
    std::copy(m.target.begin(), m.target.end(), b.target_out.begin() + static_cast<std::ptrdiff_t>(at));
    b.target_tokens += m.chosen;
  }
  return b;
}

}  // namespace sf
