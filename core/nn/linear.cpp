#include "nn/linear.h"

#include "nn/small_gemm.h"
#include "util/error.h"

namespace sf {

// Below this many rows Eigen's GEMV (one row: the decoding step) is as fast (bench/bench_forward.cpp).
constexpr Eigen::Index kSmallGemmMinRows = 2;

void linear_forward(const ConstMatRef& x, const LinearWeights& w, Mat& out) {
  if (x.cols() != w.weight.cols())
    fail(ErrorKind::Shape, "linear_forward",
         "input has " + std::to_string(x.cols()) + " columns, weight expects " + std::to_string(w.weight.cols()));
  out.resize(x.rows(), w.weight.rows());
  if (x.rows() >= kSmallGemmMinRows && x.rows() < 128 && small_gemm_available()) {
    // One sentence: dot products straight from W, no packing (nn/small_gemm.h).
    small_gemm_xwt(x.data(), static_cast<int>(x.rows()), static_cast<int>(x.cols()), x.outerStride(),
                   w.weight.data(), static_cast<int>(w.weight.rows()), out.data());
  } else if (x.rows() >= 64) {
    out.noalias() = x * w.weight.transpose();  // (N, in) (in, out)
  } else {
    // Few rows (one sentence): computed into a column-major buffer, so that Eigen's GEMM takes W^T as its
    // right-hand side (W (out, in) row-major is W^T (in, out) column-major, packed by contiguous copies) and the
    // sentence as the small left-hand side. Written straight into the row-major output, Eigen transposes the
    // product and packs all of W as a row-major left-hand side; for 20 tokens that packing was the largest cost
    // of the forward pass in perf (about 45%). For many rows the packing is amortised and the transposing copy
    // below would cost more (measured with bench/bench_forward.cpp).
    thread_local Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor> product;
    product.resize(x.rows(), w.weight.rows());
    product.noalias() = x * w.weight.transpose();  // (N, in) (in, out)
    out = product;
  }
  if (w.bias.size() > 0) out.rowwise() += w.bias;
}

}  // namespace sf
