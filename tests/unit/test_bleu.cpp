#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "train/bleu.h"

namespace sf {
namespace {

std::vector<TokenSequence> sequences(const nlohmann::json& j) {
  std::vector<TokenSequence> out;
  for (const auto& s : j) out.push_back(s.get<TokenSequence>());
  return out;
}

// Fixtures written by tests/reference/make_bleu_fixtures.py with nltk's corpus_bleu (no smoothing).
TEST(Bleu, EqualsNltkCorpusBleu) {
  std::ifstream in(std::string(STEPFORMER_FIXTURE_DIR) + "/bleu_nltk.json");
  ASSERT_TRUE(in);
  const nlohmann::json fixture = nlohmann::json::parse(in);
  ASSERT_GE(fixture["cases"].size(), 5u);
  for (const auto& c : fixture["cases"]) {
    const BleuScore score = corpus_bleu(sequences(c["hypotheses"]), sequences(c["references"]));
    // Relative, not absolute: an absolute tolerance would let 0 pass for any small score. Where an n-gram order
    // has no match, BLEU is 0; nltk then returns exp(log(DBL_MIN) / 4 + ...), about 1e-78, from the tiny value
    // it puts in place of the zero precision: ours must be exactly 0 there.
    const double want = c["nltk_bleu"].get<double>();
    if (want < 1e-60) EXPECT_EQ(score.bleu, 0.0) << c["name"] << ": nltk's " << want << " stands for 0";
    else EXPECT_LE(std::abs(score.bleu - want), 1e-9 * want) << c["name"] << ": " << score.bleu << " vs " << want;
  }
}

TEST(Bleu, HandComputedExample) {
  // hyp "the cat sat on the mat" vs ref "the cat sat on a mat": p1 = 5/6, p2 = 3/5, p3 = 2/4, p4 = 1/3, c = r.
  const BleuScore s = corpus_bleu({split_tokens("the cat sat on the mat")}, {split_tokens("the cat sat on a mat")});
  EXPECT_NEAR(s.precisions[0], 5.0 / 6, 1e-12);
  EXPECT_NEAR(s.precisions[1], 3.0 / 5, 1e-12);
  EXPECT_NEAR(s.precisions[2], 2.0 / 4, 1e-12);
  EXPECT_NEAR(s.precisions[3], 1.0 / 3, 1e-12);
  EXPECT_NEAR(s.brevity_penalty, 1.0, 1e-12);
  EXPECT_NEAR(s.bleu, std::pow(5.0 / 6 * 3.0 / 5 * 2.0 / 4 * 1.0 / 3, 0.25), 1e-12);
}

TEST(Bleu, MismatchedCorpusSizesAreAnInputError) {
  EXPECT_THROW(corpus_bleu({{"a"}}, {}), std::exception);
}

}  // namespace
}  // namespace sf
