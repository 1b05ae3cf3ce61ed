// Tensor types used across the core.
//
// Shape letters (declared once, used in every shape comment):
//   B batch, S source length, T decoder input (target) length, C d_model, H heads, D = C / H head width,
//   F feed-forward width, V vocabulary size (Vs source, Vt target), P maximum positions, L layers.
//
// Storage is row-major everywhere (it matches PyTorch dumps and safetensors): a (rows, cols) Mat holds
// element (r, c) at data()[r * cols + c]. Per-head tensors (H, T, D) are kept as a vector of H matrices
// of (T, D) in traces, and flattened to row-major (H, T, D) when dumped.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

namespace sf {

using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXf;       // column vector (n)
using RowVec = Eigen::RowVectorXf; // row vector (1, n): a bias added to every row
using MatRef = Eigen::Ref<Mat>;
using ConstMatRef = Eigen::Ref<const Mat>;

// A named, dense, row-major float tensor of any rank: what traces are dumped as, what fixtures hold.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // product(shape) values, row-major

  int64_t numel() const;
  std::string shape_string() const;  // "(2, 3, 4)"
  static Tensor from_mat(const Mat& m);                        // (rows, cols)
  static Tensor from_heads(const std::vector<Mat>& per_head);  // H x (R, K) -> (H, R, K)
  static Tensor from_vec(const Vec& v);                        // (n)
};

std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace sf
