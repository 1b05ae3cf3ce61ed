// The unpacked small-row GEMM (nn/small_gemm.h) against Eigen's product: every block shape (rows and columns
// not multiples of 4, K not a multiple of 16), row strides wider than K (x's and W's), and linear_forward's dispatch.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "io/safetensors.h"
#include "model/weights.h"
#include "nn/kernels.h"
#include "nn/linear.h"
#include "nn/small_gemm.h"
#include "train/parameters.h"
#include "util/parallel.h"

namespace sf {
namespace {

Mat random_mat(int rows, int cols, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  Mat m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

// Which path the kernel set in use computes with (nn/kernels.h): the AVX-512 kernels in the avx512 set, and in a
// -march=native build on an AVX-512 machine; the plain loops elsewhere. tests/CMakeLists.txt runs these tests
// once per set (STEPFORMER_KERNELS), so every path is compiled and run on this machine, whichever CPU it has.
TEST(SmallGemm, TheSetInUseComputesWithThePathItWasCompiledFor) {
  const KernelSet& set = kernels();
  bool avx512 = set.isa == KernelIsa::avx512;
#if defined(__x86_64__) && !defined(__EMSCRIPTEN__)
  if (std::string(set.name) == "native") avx512 = __builtin_cpu_supports("avx512f");  // built and run here
#endif
  EXPECT_EQ(small_gemm_available(), avx512) << "kernel set " << set.name;
}

TEST(SmallGemm, EqualsEigenForEveryBlockShapeAndTail) {
  std::mt19937 rng(3);
  for (int M : {1, 2, 3, 4, 5, 7, 20})
    for (int N : {1, 3, 4, 6, 9})
      for (int K : {1, 15, 16, 17, 33, 64}) {
        const Mat x = random_mat(M, K + 5, rng);  // rows K + 5 floats apart: only the first K are used
        const Mat w = random_mat(N, K, rng);
        Mat y(M, N);
        small_gemm_xwt(x.data(), M, K, x.outerStride(), w.data(), N, y.data());
        const Mat want = x.leftCols(K) * w.transpose();
        EXPECT_LT((y - want).cwiseAbs().maxCoeff(), 1e-5f * (1.0f + K / 16.0f)) << M << "x" << N << "x" << K;
        // W's rows wider than K, starting inside them (attention's scores: one head's columns of the keys).
        const Mat wide = random_mat(N, 3 * K + 7, rng);
        Mat head(M, N);
        small_gemm_xwt(x.data(), M, K, x.outerStride(), wide.data() + K, N, head.data(), wide.outerStride());
        const Mat want_head = x.leftCols(K) * wide.middleCols(K, K).transpose();
        EXPECT_LT((head - want_head).cwiseAbs().maxCoeff(), 1e-5f * (1.0f + K / 16.0f)) << M << "x" << N << "x" << K;
      }
}

TEST(SmallGemm, TimesAnUntransposedMatrixEqualsEigen) {
  // small_gemm_xw, attention's probabilities times one head's columns of the values: row blocks of 1 to 4, columns
  // in pieces of 32 with masked tails, W's and y's rows wider than N and starting inside them.
  std::mt19937 rng(5);
  for (int M : {1, 2, 3, 4, 5, 8, 9})
    for (int N : {1, 15, 16, 17, 32, 33, 40})
      for (int K : {1, 5, 17, 240}) {
        const Mat x = random_mat(M, K + 3, rng);
        const Mat wide = random_mat(K, 2 * N + 5, rng);
        Mat y = Mat::Constant(M, N + 4, 7.0f);  // the columns past N must stay as they are
        small_gemm_xw(x.data(), M, K, x.outerStride(), wide.data() + N, wide.outerStride(), N, y.data(), y.outerStride());
        const Mat want = x.leftCols(K) * wide.middleCols(N, N);
        EXPECT_LT((y.leftCols(N) - want).cwiseAbs().maxCoeff(), 1e-5f * (1.0f + K / 16.0f)) << M << "x" << N << "x" << K;
        EXPECT_TRUE((y.rightCols(4).array() == 7.0f).all()) << M << "x" << N << "x" << K;
      }
}

TEST(SmallGemm, ThreadsComputeWhatOneThreadDoes) {
  // Above the size where the columns are shared out between threads (a decoding step's output projection, a
  // sentence's feed-forward): the same floats as one thread, bit for bit, and Eigen's product within rounding.
  std::mt19937 rng(7);
  for (int M : {1, 3, 20})
    for (int N : {601, 1027}) {
      const Mat x = random_mat(M, 256, rng), w = random_mat(N, 256, rng);
      Mat one(M, N), two(M, N);
      const int before = parallel_threads();
      set_parallel_threads(1);
      small_gemm_xwt(x.data(), M, 256, x.outerStride(), w.data(), N, one.data());
      set_parallel_threads(2);
      for (int repeat = 0; repeat < 20; ++repeat)  // workers asleep, spinning, or late: the same result
        small_gemm_xwt(x.data(), M, 256, x.outerStride(), w.data(), N, two.data());
      set_parallel_threads(before);
      EXPECT_EQ(one, two) << M << "x" << N;
      EXPECT_LT((two - x * w.transpose()).cwiseAbs().maxCoeff(), 1e-4f) << M << "x" << N;
    }
}

// Rounded to values that are exactly halves, as the weights of a model stored as F16 are.
Mat halves(Mat m) {
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = f16_to_float(float_to_f16(m.data()[i]));
  return m;
}

TEST(SmallGemm, HalfWeightsGiveTheFloatKernelsResultBitForBit) {
  std::mt19937 rng(9);
  for (int M : {1, 2, 5, 20})
    for (int N : {1, 3, 4, 9, 601})
      for (int K : {7, 16, 33, 256}) {
        const Mat x = random_mat(M, K, rng), w = halves(random_mat(N, K, rng));
        PackedWeights as_floats, as_halves;
        pack_weights(w.data(), N, K, K, false, as_floats);
        pack_weights(w.data(), N, K, K, true, as_halves);
        ASSERT_FALSE(as_floats.as_halves());
        ASSERT_TRUE(as_halves.as_halves());
        EXPECT_EQ(as_halves.halves.size(), as_floats.floats.size());  // two bytes a weight instead of four
        Mat from_floats(M, N), from_halves(M, N);
        small_gemm_packed(x.data(), M, K, x.outerStride(), as_floats, from_floats.data());
        small_gemm_packed(x.data(), M, K, x.outerStride(), as_halves, from_halves.data());
        EXPECT_EQ(from_halves, from_floats) << M << "x" << N << "x" << K;
      }
  // A weight that is not exactly a half keeps the matrix in floats.
  Mat w = halves(random_mat(5, 8, rng));
  w(3, 2) = 0.1f;
  PackedWeights packed;
  pack_weights(w.data(), 5, 8, 8, true, packed);
  EXPECT_FALSE(packed.as_halves());
  EXPECT_TRUE(packed.halves.empty());
}

TEST(SmallGemm, PackedEqualsEigenForEveryBlockShapeAndTail) {
  // Register blocks of 1 to 6 rows, panels of 64 columns with the last one partial, K of any size; x's rows wider
  // than K, W's rows wider than K (a column block of a wider matrix).
  std::mt19937 rng(4);
  for (int M : {1, 2, 3, 4, 5, 6, 7, 13})
    for (int N : {1, 15, 16, 17, 64, 65, 130})
      for (int K : {1, 15, 16, 33, 64}) {
        const Mat x = random_mat(M, K + 5, rng);
        const Mat wide = random_mat(N, K + 3, rng);
        PackedWeights packed;
        pack_weights(wide.data() + 2, N, K, wide.outerStride(), false, packed);
        Mat y = Mat::Constant(M, N, 7.0f);
        small_gemm_packed(x.data(), M, K, x.outerStride(), packed, y.data());
        const Mat want = x.leftCols(K) * wide.middleCols(2, K).transpose();
        EXPECT_LT((y - want).cwiseAbs().maxCoeff(), 1e-5f * (1.0f + K / 16.0f)) << M << "x" << N << "x" << K;
        // With a bias: the sum first, then the bias, the floats of adding it afterwards (linear_forward's y).
        const RowVec bias = random_mat(1, N, rng);
        Mat with_bias = Mat::Constant(M, N, 7.0f);
        small_gemm_packed(x.data(), M, K, x.outerStride(), packed, with_bias.data(), bias.data());
        const Mat added = y.rowwise() + bias;
        EXPECT_TRUE(with_bias == added) << M << "x" << N << "x" << K;
      }
}

TEST(SmallGemm, PackedRowsGiveTheSameFloatsAloneAsInABatch) {
  // What makes a chunk of guessed tokens compute what steps one at a time would (decode/guided.h): row r of a
  // product over 13 rows, on two threads, is bit for bit the product of row r alone on one thread.
  std::mt19937 rng(6);
  const Mat x = random_mat(13, 256, rng), w = random_mat(601, 256, rng);
  PackedWeights packed;
  pack_weights(w.data(), 601, 256, 256, false, packed);
  const int before = parallel_threads();
  set_parallel_threads(2);
  Mat all(13, 601);
  small_gemm_packed(x.data(), 13, 256, x.outerStride(), packed, all.data());
  set_parallel_threads(1);
  for (int r = 0; r < 13; ++r) {
    Mat one(1, 601);
    small_gemm_packed(x.row(r).data(), 1, 256, 256, packed, one.data());
    EXPECT_EQ(one, all.row(r)) << "row " << r;
  }
  set_parallel_threads(before);
}

TEST(SmallGemm, HalfCopiesOnlyForExactHalvesAndOnlyForTheirOwnMatrix) {
  std::mt19937 rng(10);
  ModelWeights weights;
  weights.generator = {halves(random_mat(30, 16, rng)), random_mat(1, 30, rng), {}, nullptr};
  weights.decoder_layers.resize(1);
  DecoderLayerWeights& layer = weights.decoder_layers[0];
  for (LinearWeights* l : {&layer.self_attn.q, &layer.self_attn.k, &layer.self_attn.v, &layer.self_attn.out,
                           &layer.cross_attn.q, &layer.cross_attn.k, &layer.cross_attn.v, &layer.cross_attn.out})
    *l = {halves(random_mat(16, 16, rng)), RowVec(), {}, nullptr};
  layer.ffn.fc1 = {random_mat(32, 16, rng), RowVec(), {}, nullptr};  // not halves: 0.1-like floats
  layer.ffn.fc2 = {halves(random_mat(16, 32, rng)), RowVec(), {}, nullptr};
  EXPECT_EQ(attach_packed_weights(weights), 10);
  EXPECT_TRUE(has_half_weights(weights.generator));
  EXPECT_FALSE(has_half_weights(layer.ffn.fc1));
  EXPECT_TRUE(has_packed_weights(layer.ffn.fc1));  // packed as floats
  // The same outputs from halves as from floats.
  const Mat x = random_mat(3, 16, rng);
  Mat with_halves, with_floats;
  linear_forward(x, weights.generator, with_halves);
  LinearWeights copy = weights.generator;  // a copy owns another matrix: it computes from its floats
  EXPECT_FALSE(has_half_weights(copy));
  linear_forward(x, copy, with_floats);
  EXPECT_EQ(with_halves, with_floats);
  // A copy changed afterwards computes what its floats say.
  copy.weight(2, 5) += 1.0f;
  linear_forward(x, copy, with_floats);
  EXPECT_NE(with_floats.col(2), with_halves.col(2));
  // Training takes the parameters to change them: the packed copies go.
  parameter_views(weights);
  EXPECT_FALSE(has_half_weights(weights.generator));
  EXPECT_FALSE(has_packed_weights(layer.ffn.fc1));
}

TEST(SmallGemm, LinearForwardAgreesAcrossItsPaths) {
  // One row and a sentence (this kernel where the build has it), many rows (Eigen's GEMM): the same rows give
  // the same outputs whichever path computes them.
  std::mt19937 rng(5);
  LinearWeights w{random_mat(40, 48, rng), random_mat(1, 40, rng), {}, nullptr};
  const Mat x = random_mat(200, 48, rng);
  Mat all, few, one;
  linear_forward(x, w, all);
  linear_forward(x.topRows(20), w, few);
  linear_forward(x.topRows(1), w, one);
  EXPECT_LT((few - all.topRows(20)).cwiseAbs().maxCoeff(), 1e-5f);
  EXPECT_LT((one - all.topRows(1)).cwiseAbs().maxCoeff(), 1e-5f);
}

}  // namespace
}  // namespace sf
