// nn/softmax.h: one row's softmax against the same sum in double precision, its blocked cells, an empty row, NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "nn/softmax.h"

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The float row's softmax with exp, sum and division in double: x - max is the float difference (rounded as the
// row rounds it, a relative error of |x - max| * 2^-24 in its exp that no exp could undo).
std::vector<double> reference(const std::vector<float>& x, float scale) {
  float max = -INFINITY;
  for (float v : x) max = std::max(max, scale * v);
  std::vector<double> p(x.size());
  double sum = 0;
  for (size_t j = 0; j < x.size(); ++j) sum += p[j] = std::exp(static_cast<double>(scale * x[j] - max));
  for (double& v : p) v /= sum;
  return p;
}

// Every length from 1 to 40 (whole vectors of 16 and the masked rest), a 256-key row and an 8,000-logit row,
// with and without attention's scale: each probability within 1e-6 of the double-precision one, relatively.
TEST(Softmax, EqualsDoublePrecisionForEveryLengthAndScale) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<int> lengths;
  for (int n = 1; n <= 40; ++n) lengths.push_back(n);
  lengths.push_back(256);
  lengths.push_back(8000);
  for (float scale : {1.0f, 0.1767767f}) {
    for (int n : lengths) {
      std::vector<float> x(static_cast<size_t>(n)), p(x.size(), -1.0f);
      for (float& v : x) v = normal(rng);
      ASSERT_TRUE(sf::softmax_row(x.data(), p.data(), n, scale));
      const std::vector<double> want = reference(x, scale);
      for (int j = 0; j < n; ++j)
        ASSERT_NEAR(p[static_cast<size_t>(j)], want[static_cast<size_t>(j)], 1e-6 * want[static_cast<size_t>(j)] + 1e-30)
            << "n " << n << " cell " << j << " scale " << scale;
    }
  }
}

// The exponential over the whole range a softmax feeds it (x - max from 0 down to -87): the row {0, x} gives
// e^x / (1 + e^x), within 4e-7 of it relatively (the polynomial's 1-2 ulp and the division's rounding).
TEST(Softmax, ExponentialHoldsOverItsWholeRange) {
  for (double x = 0.0; x > -87.0; x -= 0.0173) {
    const float row[2] = {0.0f, static_cast<float>(x)};
    float p[2];
    ASSERT_TRUE(sf::softmax_row(row, p, 2));
    const double e = std::exp(static_cast<double>(row[1]));
    ASSERT_NEAR(p[1], e / (1 + e), 4e-7 * e / (1 + e)) << "x " << x;
  }
}

// Blocked cells (-inf) get exactly 0 and the rest sum to 1; a row with every cell blocked is reported and left
// as it was; a NaN spoils its row instead of vanishing.
TEST(Softmax, BlockedCellsEmptyRowsAndNaN) {
  std::vector<float> x = {1.0f, kNegInf, 2.0f, kNegInf, 0.5f, 3.0f, kNegInf, -1.0f, 0.0f, 2.5f, kNegInf, 1.5f,
                          -2.0f, 0.25f, kNegInf, 4.0f, kNegInf, 1.0f};
  std::vector<float> p(x.size());
  ASSERT_TRUE(sf::softmax_row(x.data(), p.data(), static_cast<int>(x.size())));
  double sum = 0;
  for (size_t j = 0; j < x.size(); ++j) {
    if (std::isinf(x[j])) EXPECT_EQ(p[j], 0.0f) << j;
    else EXPECT_GT(p[j], 0.0f) << j;
    sum += p[j];
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);

  std::vector<float> blocked(20, kNegInf), untouched(20, 7.0f);
  EXPECT_FALSE(sf::softmax_row(blocked.data(), untouched.data(), 20));
  for (float v : untouched) EXPECT_EQ(v, 7.0f);
  EXPECT_FALSE(sf::softmax_row(blocked.data(), untouched.data(), 0));

  std::vector<float> with_nan = {0.0f, 1.0f, std::nanf(""), 2.0f};
  std::vector<float> q(with_nan.size());
  sf::softmax_row(with_nan.data(), q.data(), 4);
  for (float v : q) EXPECT_TRUE(std::isnan(v));
}

// In place (the masked rows of attention and of the output layer): the same floats as from a separate row.
TEST(Softmax, InPlaceGivesTheSameFloats) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> x(37), apart(37);
  for (float& v : x) v = normal(rng);
  ASSERT_TRUE(sf::softmax_row(x.data(), apart.data(), 37, 0.5f));
  ASSERT_TRUE(sf::softmax_row(x.data(), x.data(), 37, 0.5f));
  for (size_t j = 0; j < x.size(); ++j) EXPECT_EQ(x[j], apart[j]) << j;
}

// The maximum is taken over every lane of the register (the lanes are reduced by shuffles): one cell 200 above the
// rest, at every position of rows of 16, 37 and 128, takes the whole probability. A lane the maximum missed would
// leave x - max = 200 to the exponential, which overflows (e^200 > FLT_MAX) and turns the row into NaN.
TEST(Softmax, TheMaximumIsTakenOverEveryLane) {
  for (int n : {16, 37, 128}) {
    for (int spike = 0; spike < n; ++spike) {
      std::vector<float> x(static_cast<size_t>(n), 0.0f), p(x.size());
      x[static_cast<size_t>(spike)] = 200.0f;
      ASSERT_TRUE(sf::softmax_row(x.data(), p.data(), n));
      for (int j = 0; j < n; ++j) ASSERT_EQ(p[static_cast<size_t>(j)], j == spike ? 1.0f : 0.0f) << n << " " << spike;
    }
  }
}

}  // namespace
