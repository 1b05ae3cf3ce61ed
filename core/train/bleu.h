// Corpus BLEU-4 (Papineni et al. 2002), as the Multi30k tutorials report it: one reference per sentence,
// tokenized lowercase text, uniform weights 1/4, no smoothing, and the brevity penalty on the corpus:
//   p_n  = sum over sentences of clipped n-gram matches / sum of hypothesis n-grams        (n = 1..4)
//   BP   = 1 if c > r else exp(1 - r / c)      c, r: total hypothesis and reference lengths
//   BLEU = BP * exp(mean_n log p_n)            (0 when any p_n is 0, as nltk's corpus_bleu without smoothing)
// Equal to nltk.translate.bleu_score.corpus_bleu with single references (checked against fixtures), including
// its one quirk: a hypothesis with no n-grams of order n (shorter than n tokens) still adds 1 to p_n's
// denominator. Multi30k's hypotheses are almost never that short, so this rarely matters.
#pragma once
#include <array>
#include <string>
#include <vector>

namespace sf {

struct BleuScore {
  double bleu = 0.0;                 // 0..1 (multiply by 100 to print "BLEU = 36.04")
  std::array<double, 4> precisions{};  // p_1 .. p_4
  double brevity_penalty = 0.0;
  long hypothesis_length = 0, reference_length = 0;
};

using TokenSequence = std::vector<std::string>;

BleuScore corpus_bleu(const std::vector<TokenSequence>& hypotheses, const std::vector<TokenSequence>& references);

// Splits on runs of spaces (the tokenized text files hold one sentence per line, tokens separated by spaces).
TokenSequence split_tokens(const std::string& line);

}  // namespace sf
