// The forward's general matrix products (nn/kernels.h: linear_forward's, attention's) through Eigen, compiled for
// one instruction set (nn/isa/isa_kernels.h). Each is the expression its caller used to write on its own
// matrices, here on maps of the same memory: Eigen picks the same product kernel and blocking for the same
// storage orders and sizes, so the floats are those of the library compiled for this set alone.
#include <Eigen/Core>

#include "nn/isa/isa_kernels.h"

namespace sf::STEPFORMER_ISA {

namespace {
using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using ConstStrided = Eigen::Map<const RowMajor, 0, Eigen::OuterStride<>>;
using Strided = Eigen::Map<RowMajor, 0, Eigen::OuterStride<>>;
}  // namespace

void add_x_wt(const float* x, long M, long K, long x_stride, const float* w, long N, long w_stride, float* y,
              long y_stride) {
  const ConstStrided xm(x, M, K, Eigen::OuterStride<>(x_stride));  // (M, K)
  const ConstStrided wm(w, N, K, Eigen::OuterStride<>(w_stride));  // (N, K)
  Strided ym(y, M, N, Eigen::OuterStride<>(y_stride));             // (M, N)
  ym.noalias() += xm * wm.transpose();
}

void linear_few_rows(const float* x, long M, long K, long x_stride, const float* w, long N, const float* bias,
                     float* y) {
  const ConstStrided xm(x, M, K, Eigen::OuterStride<>(x_stride));  // (M, K)
  const Eigen::Map<const RowMajor> wm(w, N, K);                    // (N, K)
  Eigen::Map<RowMajor> ym(y, M, N);                                // (M, N)
  thread_local ColMajor product;
  product.resize(M, N);
  product.noalias() = xm * wm.transpose();
  ym = product;
  if (bias) ym.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias, N);
}

void x_wt(const float* x, long M, long K, long x_stride, const float* w, long N, long w_stride, float* y,
          bool by_rows) {
  const ConstStrided xm(x, M, K, Eigen::OuterStride<>(x_stride));  // (M, K)
  const ConstStrided wm(w, N, K, Eigen::OuterStride<>(w_stride));  // (N, K)
  Eigen::Map<RowMajor> ym(y, M, N);                                // (M, N)
  if (by_rows) {
    for (long i = 0; i < M; ++i) ym.row(i).noalias() = (wm * xm.row(i).transpose()).transpose();
  } else {
    ym.noalias() = xm * wm.transpose();
  }
}

void x_w(const float* x, long M, long K, long x_stride, const float* w, long N, long w_stride, float* y, long y_stride,
         bool by_rows) {
  const ConstStrided xm(x, M, K, Eigen::OuterStride<>(x_stride));  // (M, K)
  const ConstStrided wm(w, K, N, Eigen::OuterStride<>(w_stride));  // (K, N)
  Strided ym(y, M, N, Eigen::OuterStride<>(y_stride));             // (M, N)
  if (by_rows) {
    for (long i = 0; i < M; ++i) ym.row(i).noalias() = xm.row(i) * wm;
  } else {
    ym.noalias() = xm * wm;
  }
}

}  // namespace sf::STEPFORMER_ISA
