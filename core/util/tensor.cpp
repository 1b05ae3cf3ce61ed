#include "util/tensor.h"

#include <numeric>

#include "util/error.h"

namespace sf {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

int64_t Tensor::numel() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
}

std::string Tensor::shape_string() const { return sf::shape_string(shape); }

Tensor Tensor::from_mat(const Mat& m) {
  Tensor t;
  t.shape = {m.rows(), m.cols()};
  t.data.assign(m.data(), m.data() + m.size());
  return t;
}

Tensor Tensor::from_heads(const std::vector<Mat>& per_head) {
  Tensor t;
  const int64_t rows = per_head.empty() ? 0 : per_head[0].rows();
  const int64_t cols = per_head.empty() ? 0 : per_head[0].cols();
  t.shape = {static_cast<int64_t>(per_head.size()), rows, cols};
  t.data.reserve(static_cast<size_t>(t.numel()));
  for (const Mat& m : per_head) {
    if (m.rows() != rows || m.cols() != cols)
      fail(ErrorKind::Shape, "Tensor::from_heads", "heads differ in shape");
    t.data.insert(t.data.end(), m.data(), m.data() + m.size());
  }
  return t;
}

Tensor Tensor::from_vec(const Vec& v) {
  Tensor t;
  t.shape = {v.size()};
  t.data.assign(v.data(), v.data() + v.size());
  return t;
}

}  // namespace sf
