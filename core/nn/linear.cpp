#include "nn/linear.h"

#include <algorithm>

#include "nn/kernels.h"
#include "nn/small_gemm.h"
#include "util/error.h"
#include "util/parallel.h"

namespace sf {

// Many rows (a batch in training, a long sentence): one Eigen product per block of the output's columns (the
// rows of W), the blocks shared out between the pool's threads (util/parallel.h). The blocks are fixed by the
// sizes alone, not by the thread count, and each output is the sum over the whole input width inside one
// product, so the numbers do not depend on how many threads ran them (training reproduces bit for bit).
void for_each_column_block(Eigen::Index columns, const std::function<void(Eigen::Index, Eigen::Index)>& block) {
  // Blocks of 64 columns, or wider so that there are at most 8: every block's product packs the whole input
  // again, which for a training batch (2,000 rows) times the output layer (6,000 columns: 93 blocks of 64) cost
  // more than the threads gained. The width depends on the sizes alone.
  constexpr Eigen::Index kMinBlock = 64, kMaxBlocks = 8, kSmallest = 16;  // a last block under 16 joins the one before
  const Eigen::Index kBlock = std::max(kMinBlock, ((columns + kMaxBlocks - 1) / kMaxBlocks + 15) / 16 * 16);
  Eigen::Index blocks = (columns + kBlock - 1) / kBlock;
  if (blocks > 1 && columns - (blocks - 1) * kBlock < kSmallest) --blocks;
  parallel_for(static_cast<int>(blocks), 1, [&](int begin, int end) {
    for (int b = begin; b < end; ++b) {
      const Eigen::Index first = b * kBlock;
      block(first, b + 1 == blocks ? columns - first : kBlock);
    }
  });
}

void linear_forward(const ConstMatRef& x, const LinearWeights& w, Mat& out) {
  if (x.cols() != w.weight.cols())
    fail(ErrorKind::Shape, "linear_forward",
         "input has " + std::to_string(x.cols()) + " columns, weight expects " + std::to_string(w.weight.cols()));
  if (w.bias.size() > 0 && w.bias.size() != w.weight.rows())
    fail(ErrorKind::Shape, "linear_forward",
         "bias has " + std::to_string(w.bias.size()) + " values, weight " + std::to_string(w.weight.rows()) + " outputs");
  out.resize(x.rows(), w.weight.rows());
  const bool packed_at_load = has_packed_weights(w);
  if (small_gemm_available() && (packed_at_load || x.rows() < 128)) {
    // W as packed when the model was loaded (nn/small_gemm.h), for any number of rows: 1.3-1.5x Eigen's GEMM
    // at 128-256 rows of 256-512 inputs (one thread, measured), and each row's outputs the same floats in a pass
    // of any length. A weight without a packed copy (a copy, a model in training) is packed here for a few
    // rows, into this thread's buffer: the same layout, so the same floats; for many, Eigen's GEMM packs its own.
    const PackedWeights* packed = w.packed.get();
    if (!packed_at_load) {
      thread_local PackedWeights scratch;
      pack_weights(w.weight.data(), static_cast<int>(w.weight.rows()), static_cast<int>(w.weight.cols()),
                   w.weight.cols(), false, scratch);
      packed = &scratch;
    }
    small_gemm_packed(x.data(), static_cast<int>(x.rows()), static_cast<int>(x.cols()), x.outerStride(), *packed,
                      out.data(), w.bias.size() > 0 ? w.bias.data() : nullptr);
    return;
  }
  if (x.rows() >= 64) {
    // Each block starts as the bias (or zeros) and the product is added to it: Eigen's `=` of a product zeroes
    // its destination first and the bias would be one more pass over the output (together 7% of a 256-token
    // forward, measured with perf); `+=` accumulates straight into it.
    for_each_column_block(w.weight.rows(), [&](Eigen::Index first, Eigen::Index n) {
      auto block = out.middleCols(first, n);  // (N, n)
      if (w.bias.size() > 0) block.rowwise() = w.bias.segment(first, n);
      else block.setZero();
      // block += x W[first : first + n]^T   (N, in) (in, n), by the kernel set's Eigen (nn/kernels.h)
      kernels().add_x_wt(x.data(), x.rows(), x.cols(), x.outerStride(), w.weight.row(first).data(), n,
                         w.weight.cols(), block.data(), block.outerStride());
    });
    return;
  }
  // A build without the AVX-512 kernel: computed into a column-major buffer, so that Eigen takes W^T (in, out)
  // column-major as its right-hand side (contiguous copies) and the few rows as the small left-hand side;
  // written straight into the row-major output, Eigen would pack all of W as a row-major left-hand side
  // instead (measured with bench/bench_forward.cpp).
  kernels().linear_few_rows(x.data(), x.rows(), x.cols(), x.outerStride(), w.weight.data(), w.weight.rows(),
                            w.bias.size() > 0 ? w.bias.data() : nullptr, out.data());
}

}  // namespace sf
