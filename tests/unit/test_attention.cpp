// nn/attention.h: attend() over a sentence long enough for its packed scores (64 keys and more) against the
// formula computed cell by cell in double precision, with every kind of mask; and the rows a causal mask lets it
// skip: the same floats with or without the trace's scores, and in a chunk of rows as in the whole pass.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "nn/attention.h"

namespace {

using sf::AttentionMask;
using sf::Mat;

Mat random_mat(Eigen::Index rows, Eigen::Index cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Mat m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

// out_h = softmax(q_h k_h^T * scale, blocked cells excluded) v_h, in double, cell by cell (a row with every cell
// blocked: zeros, or 1/Tk everywhere with blocked_row_uniform).
Mat reference(const Mat& q, const Mat& k, const Mat& v, int heads, float scale, const AttentionMask& mask) {
  const Eigen::Index tq = q.rows(), tk = k.rows(), d = q.cols() / heads;
  Mat out = Mat::Zero(tq, q.cols());
  for (int h = 0; h < heads; ++h)
    for (Eigen::Index i = 0; i < tq; ++i) {
      std::vector<double> p(static_cast<size_t>(tk), 0.0);
      double max = -INFINITY;
      for (Eigen::Index j = 0; j < tk; ++j) {
        if (mask.blocks(h, i, j)) continue;
        double s = 0;
        for (Eigen::Index c = 0; c < d; ++c) s += static_cast<double>(q(i, h * d + c)) * k(j, h * d + c);
        p[static_cast<size_t>(j)] = s * scale;
        max = std::max(max, s * scale);
      }
      double sum = 0;
      for (Eigen::Index j = 0; j < tk; ++j)
        if (!mask.blocks(h, i, j)) sum += p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - max);
      for (Eigen::Index j = 0; j < tk; ++j) {
        double w = mask.blocks(h, i, j) || sum == 0 ? 0.0 : p[static_cast<size_t>(j)] / sum;
        if (sum == 0 && mask.blocked_row_uniform) w = 1.0 / static_cast<double>(tk);
        for (Eigen::Index c = 0; c < d; ++c) out(i, h * d + c) += static_cast<float>(w * v(j, h * d + c));
      }
    }
  return out;
}

AttentionMask causal_mask(int first_position, Eigen::Index rows) {
  AttentionMask mask;
  mask.causal = true;
  for (Eigen::Index i = 0; i < rows; ++i) mask.query_positions.push_back(first_position + static_cast<int>(i));
  return mask;
}

constexpr int kHeads = 4;
constexpr Eigen::Index kWidth = 128;  // 4 heads of 32, as the shipped models' heads
const float kScale = 1.0f / std::sqrt(32.0f);

Mat attend_all(const Mat& q, const Mat& k, const Mat& v, const AttentionMask& mask, bool keep_scores) {
  Mat out(q.rows(), q.cols());
  std::vector<Mat> scores(keep_scores ? kHeads : 0), probs(kHeads), head_out(kHeads);
  sf::attend(q, k, v, kHeads, kScale, mask, {}, {}, out, sf::AttendRecord{scores, probs, head_out});
  return out;
}

// 150 queries over 150 keys, causal: within 2e-6 of the double-precision formula, and the same floats whether or
// not the trace keeps the scores (without them the scores past each group's last position are not computed).
TEST(Attention, CausalPassEqualsTheFormulaWithOrWithoutTheScores) {
  std::mt19937 rng(11);
  const Mat q = random_mat(150, kWidth, rng), k = random_mat(150, kWidth, rng), v = random_mat(150, kWidth, rng);
  const AttentionMask mask = causal_mask(0, 150);
  const Mat traced = attend_all(q, k, v, mask, true), plain = attend_all(q, k, v, mask, false);
  EXPECT_TRUE(traced == plain);
  EXPECT_LT((plain - reference(q, k, v, kHeads, kScale, mask)).cwiseAbs().maxCoeff(), 2e-6f);
}

// A chunk of 20 rows at positions 130-149 over the same 150 keys (a chunk of guessed tokens over a long sentence)
// gives the whole pass's rows bit for bit.
TEST(Attention, ChunkOfRowsEqualsTheWholePassBitForBit) {
  std::mt19937 rng(12);
  const Mat q = random_mat(150, kWidth, rng), k = random_mat(150, kWidth, rng), v = random_mat(150, kWidth, rng);
  const Mat whole = attend_all(q, k, v, causal_mask(0, 150), false);
  const Mat chunk = attend_all(q.bottomRows(20), k, v, causal_mask(130, 20), false);
  EXPECT_TRUE(chunk == whole.bottomRows(20));
}

// The trace's scores are every cell's q k^T * scale, the blocked ones too: a chunk of 20 rows at positions 100-119
// over 150 keys (30 keys past every row's position) records them all.
TEST(Attention, RecordedScoresCoverEveryCell) {
  std::mt19937 rng(14);
  const Mat q = random_mat(20, kWidth, rng), k = random_mat(150, kWidth, rng), v = random_mat(150, kWidth, rng);
  Mat out(20, kWidth);
  std::vector<Mat> scores(kHeads), probs(kHeads), head_out(kHeads);
  sf::attend(q, k, v, kHeads, kScale, causal_mask(100, 20), {}, {}, out, sf::AttendRecord{scores, probs, head_out});
  for (int h = 0; h < kHeads; ++h) {
    const Mat want = q.middleCols(h * 32, 32) * k.middleCols(h * 32, 32).transpose() * kScale;
    ASSERT_EQ(scores[static_cast<size_t>(h)].cols(), 150);
    EXPECT_LT((scores[static_cast<size_t>(h)] - want).cwiseAbs().maxCoeff(), 1e-5f) << "head " << h;
    EXPECT_EQ(probs[static_cast<size_t>(h)].rightCols(30).cwiseAbs().maxCoeff(), 0.0f) << "head " << h;
  }
}

// Padding keys, a painted head, padding queries spread evenly (blocked_row_uniform), no mask: each against the
// formula.
TEST(Attention, EveryKindOfMaskEqualsTheFormula) {
  std::mt19937 rng(13);
  const Mat q = random_mat(100, kWidth, rng), k = random_mat(90, kWidth, rng), v = random_mat(90, kWidth, rng);
  std::vector<AttentionMask> masks(4);
  masks[0].key_blocked.assign(90, 0);
  for (int j = 70; j < 90; ++j) masks[0].key_blocked[static_cast<size_t>(j)] = 1;
  masks[1] = causal_mask(0, 100);
  masks[1].painted.resize(kHeads);
  masks[1].painted[2] = Mat::Zero(100, 90);
  for (Eigen::Index i = 0; i < 100; ++i) masks[1].painted[2](i, i % 90) = 1.0f;  // head 2: the diagonal blocked
  masks[2].query_blocked.assign(100, 0);
  for (int i = 95; i < 100; ++i) masks[2].query_blocked[static_cast<size_t>(i)] = 1;
  masks[2].blocked_row_uniform = true;
  for (size_t m = 0; m < masks.size(); ++m) {
    const Mat out = attend_all(q, k, v, masks[m], false);
    EXPECT_LT((out - reference(q, k, v, kHeads, kScale, masks[m])).cwiseAbs().maxCoeff(), 2e-6f) << "mask " << m;
  }
}

}  // namespace
