#include "nn/layer_norm.h"

#include "nn/kernels.h"
#include "util/error.h"

namespace sf {

// The rows are normalised by the kernel set in use (nn/kernels.h, nn/isa/layer_norm_rows.cpp).
void layer_norm_forward(const ConstMatRef& x, const LayerNormWeights& w, float eps, LayerNormTrace& t) {
  const Eigen::Index n = x.rows(), c = x.cols();
  if (w.gamma.size() != c || w.beta.size() != c)
    fail(ErrorKind::Shape, "layer_norm_forward",
         "input has " + std::to_string(c) + " columns, gamma/beta have " + std::to_string(w.gamma.size()));
  t.mean.resize(n);
  t.std.resize(n);
  t.out.resize(n, c);
  kernels().layer_norm_rows(x.data(), n, c, x.outerStride(), w.gamma.data(), w.beta.data(), eps, t.out.data(),
                            t.mean.data(), t.std.data());
}

}  // namespace sf
