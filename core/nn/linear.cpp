#include "nn/linear.h"

#include "util/error.h"

namespace sf {

void linear_forward(const ConstMatRef& x, const LinearWeights& w, Mat& out) {
  if (x.cols() != w.weight.cols())
    fail(ErrorKind::Shape, "linear_forward",
         "input has " + std::to_string(x.cols()) + " columns, weight expects " + std::to_string(w.weight.cols()));
  out.resize(x.rows(), w.weight.rows());
  out.noalias() = x * w.weight.transpose();  // (N, in) (in, out)
  if (w.bias.size() > 0) out.rowwise() += w.bias;
}

}  // namespace sf
