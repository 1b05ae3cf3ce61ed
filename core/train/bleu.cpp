#include "train/bleu.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "util/error.h"

namespace sf {

TokenSequence split_tokens(const std::string& line) {
  TokenSequence out;
  std::istringstream in(line);
  std::string token;
  while (in >> token) out.push_back(token);
  return out;
}

namespace {

using NGramCounts = std::map<std::vector<std::string>, int>;

NGramCounts count_ngrams(const TokenSequence& tokens, size_t n) {
  NGramCounts counts;
  for (size_t i = 0; i + n <= tokens.size(); ++i)
    ++counts[std::vector<std::string>(tokens.begin() + static_cast<long>(i), tokens.begin() + static_cast<long>(i + n))];
  return counts;
}

}  // namespace

BleuScore corpus_bleu(const std::vector<TokenSequence>& hypotheses, const std::vector<TokenSequence>& references) {
  if (hypotheses.size() != references.size())
    fail(ErrorKind::Input, "corpus_bleu",
         std::to_string(hypotheses.size()) + " hypotheses but " + std::to_string(references.size()) + " references");
  std::array<long, 4> matches{}, totals{};
  BleuScore score;
  for (size_t s = 0; s < hypotheses.size(); ++s) {
    const TokenSequence& hyp = hypotheses[s];
    const TokenSequence& ref = references[s];
    score.hypothesis_length += static_cast<long>(hyp.size());
    score.reference_length += static_cast<long>(ref.size());
    for (size_t n = 1; n <= 4; ++n) {
      const NGramCounts hyp_counts = count_ngrams(hyp, n);
      const NGramCounts ref_counts = count_ngrams(ref, n);
      for (const auto& [gram, count] : hyp_counts) {
        auto it = ref_counts.find(gram);
        matches[n - 1] += it == ref_counts.end() ? 0 : std::min(count, it->second);  // clipped counts
      }
      // As nltk's modified_precision: a sentence's denominator is at least 1, even with no n-grams of order n.
      totals[n - 1] += std::max<long>(1, hyp.size() >= n ? static_cast<long>(hyp.size() - n + 1) : 0);
    }
  }
  double log_sum = 0.0;
  bool any_zero = false;
  for (int n = 0; n < 4; ++n) {
    score.precisions[n] = totals[n] > 0 ? static_cast<double>(matches[n]) / totals[n] : 0.0;
    if (matches[n] == 0) any_zero = true;
    else log_sum += std::log(score.precisions[n]);
  }
  const double c = static_cast<double>(score.hypothesis_length), r = static_cast<double>(score.reference_length);
  score.brevity_penalty = c == 0 ? 0.0 : (c > r ? 1.0 : std::exp(1.0 - r / c));
  score.bleu = any_zero ? 0.0 : score.brevity_penalty * std::exp(log_sum / 4.0);
  return score;
}

}  // namespace sf
