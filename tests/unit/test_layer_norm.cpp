// Layer norm (nn/layer_norm.h) against the formula in double precision: every width around the 16-lane blocks of
// the AVX-512 path (1, 15, 16, 17, ... 512), rows far from zero (mean 1000, where a naive one-pass variance loses
// its digits), a block of a wider matrix, and the shape check. tests/CMakeLists.txt builds this file again with
// the kernels compiled for AVX2 and for baseline x86-64, so the portable path is held to the same numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "nn/layer_norm.h"
#include "util/error.h"

namespace sf {
namespace {

struct Reference {
  std::vector<double> mean, std;
  std::vector<std::vector<double>> out;
};

Reference layer_norm_in_double(const Mat& x, const LayerNormWeights& w, double eps) {
  Reference r;
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    double mean = 0, var = 0;
    for (Eigen::Index j = 0; j < x.cols(); ++j) mean += x(i, j);
    mean /= static_cast<double>(x.cols());
    for (Eigen::Index j = 0; j < x.cols(); ++j) var += (x(i, j) - mean) * (x(i, j) - mean);
    var /= static_cast<double>(x.cols());
    const double std = std::sqrt(var + eps);
    std::vector<double> row;
    for (Eigen::Index j = 0; j < x.cols(); ++j) row.push_back((x(i, j) - mean) / std * w.gamma[j] + w.beta[j]);
    r.mean.push_back(mean);
    r.std.push_back(std);
    r.out.push_back(row);
  }
  return r;
}

TEST(LayerNorm, EqualsDoublePrecisionForEveryWidthAndOffset) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  for (const int cols : {1, 2, 15, 16, 17, 31, 32, 33, 64, 100, 512})
    for (const float offset : {0.0f, 1000.0f}) {
      Mat x(7, cols);
      for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = offset + normal(rng);
      LayerNormWeights w{RowVec(cols), RowVec(cols)};
      for (int j = 0; j < cols; ++j) w.gamma[j] = 0.5f + 0.1f * normal(rng), w.beta[j] = 0.1f * normal(rng);
      LayerNormTrace t;
      layer_norm_forward(x, w, 1e-5f, t);
      const Reference r = layer_norm_in_double(x, w, 1e-5);
      ASSERT_EQ(t.out.rows(), x.rows());
      ASSERT_EQ(t.out.cols(), cols);
      for (Eigen::Index i = 0; i < x.rows(); ++i) {
        EXPECT_NEAR(t.mean[i], r.mean[static_cast<size_t>(i)], 1e-6 * (1 + offset)) << cols << " cols, row " << i;
        EXPECT_NEAR(t.std[i], r.std[static_cast<size_t>(i)], 2e-4 * r.std[static_cast<size_t>(i)] + 1e-6) << cols;
        // Float rows near 1000 carry about 6e-5 of absolute error into x - mean: relative to std (about 1) that
        // is the tolerance.
        const double tolerance = offset > 0 ? 3e-4 : 2e-5;
        for (Eigen::Index j = 0; j < cols; ++j)
          EXPECT_NEAR(t.out(i, j), r.out[static_cast<size_t>(i)][static_cast<size_t>(j)], tolerance)
              << cols << " cols, offset " << offset << ", (" << i << ", " << j << ")";
      }
    }
}

TEST(LayerNorm, ABlockOfAWiderMatrixIsNormalisedAsACopyOfIt) {
  std::mt19937 rng(12);
  std::normal_distribution<float> normal;
  Mat wide(9, 50);
  for (Eigen::Index i = 0; i < wide.size(); ++i) wide.data()[i] = normal(rng);
  LayerNormWeights w{RowVec::Constant(33, 1.5f), RowVec::Constant(33, -0.25f)};
  LayerNormTrace from_block, from_copy;
  layer_norm_forward(wide.block(2, 5, 6, 33), w, 1e-5f, from_block);
  const Mat copy = wide.block(2, 5, 6, 33);
  layer_norm_forward(copy, w, 1e-5f, from_copy);
  // The same numbers (Eigen may vectorise a strided block and a copy differently: the last bits may differ).
  EXPECT_LE((from_block.out - from_copy.out).cwiseAbs().maxCoeff(), 1e-6f);
  EXPECT_LE((from_block.mean - from_copy.mean).cwiseAbs().maxCoeff(), 1e-7f);
  EXPECT_LE((from_block.std - from_copy.std).cwiseAbs().maxCoeff(), 1e-6f);
}

TEST(LayerNorm, AConstantRowIsBetaAndWrongWeightsAreRefused) {
  Mat x = Mat::Constant(2, 20, 3.0f);
  LayerNormWeights w{RowVec::Constant(20, 2.0f), RowVec::LinSpaced(20, -1.0f, 1.0f)};
  LayerNormTrace t;
  layer_norm_forward(x, w, 1e-5f, t);
  EXPECT_LE((t.out.row(0) - w.beta).cwiseAbs().maxCoeff(), 1e-6f) << "(x - mean) is 0: beta alone";
  EXPECT_NEAR(t.std[0], std::sqrt(1e-5f), 1e-9f) << "the std recorded has eps in it";
  LayerNormWeights narrow{RowVec::Constant(19, 1.0f), RowVec::Constant(19, 0.0f)};
  try {
    layer_norm_forward(x, narrow, 1e-5f, t);
    FAIL() << "19 weights for 20 columns were taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Shape);
    EXPECT_NE(std::string(e.what()).find("input has 20 columns, gamma/beta have 19"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sf
