#include "nn/linear.h"

#include <cstring>

#include "io/safetensors.h"
#include "nn/small_gemm.h"
#include "util/error.h"

namespace sf {

bool uses_half_weights(const LinearWeights& w) {
  return w.half && w.half_of == w.weight.data() && w.half->size() == static_cast<size_t>(w.weight.size());
}

void linear_forward(const ConstMatRef& x, const LinearWeights& w, Mat& out) {
  if (x.cols() != w.weight.cols())
    fail(ErrorKind::Shape, "linear_forward",
         "input has " + std::to_string(x.cols()) + " columns, weight expects " + std::to_string(w.weight.cols()));
  out.resize(x.rows(), w.weight.rows());
  if (x.rows() < 128 && small_gemm_available()) {
    // A decoding step or one sentence: dot products straight from W, no packing, W's rows shared out between
    // threads (nn/small_gemm.h). For one row Eigen's GEMV is as fast on one thread, slower on two.
    if (uses_half_weights(w))
      small_gemm_xwt_f16(x.data(), static_cast<int>(x.rows()), static_cast<int>(x.cols()), x.outerStride(),
                         w.half->data(), static_cast<int>(w.weight.rows()), out.data());
    else
      small_gemm_xwt(x.data(), static_cast<int>(x.rows()), static_cast<int>(x.cols()), x.outerStride(),
                     w.weight.data(), static_cast<int>(w.weight.rows()), out.data());
  } else if (x.rows() >= 64) {
    out.noalias() = x * w.weight.transpose();  // (N, in) (in, out)
  } else {
    // A build without the AVX-512 kernel: computed into a column-major buffer, so
    // that Eigen takes W^T (in, out) column-major as its right-hand side (contiguous copies) and the few rows as
    // the small left-hand side; written straight into the row-major output, Eigen would pack all of W as a
    // row-major left-hand side instead (measured with bench/bench_forward.cpp).
    thread_local Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor> product;
    product.resize(x.rows(), w.weight.rows());
    product.noalias() = x * w.weight.transpose();  // (N, in) (in, out)
    out = product;
  }
  if (w.bias.size() > 0) out.rowwise() += w.bias;
}

namespace {

bool attach_half(LinearWeights& w) {
  w.half.reset();
  w.half_of = nullptr;
  if (w.weight.size() == 0) return false;
  auto half = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(w.weight.size()));
  for (Eigen::Index i = 0; i < w.weight.size(); ++i) {
    const float value = w.weight.data()[i];
    const uint16_t h = float_to_f16(value);
    const float back = f16_to_float(h);
    if (std::memcmp(&back, &value, sizeof(float)) != 0) return false;  // not a half (or a NaN): floats it is
    (*half)[static_cast<size_t>(i)] = h;
  }
  w.half = std::move(half);
  w.half_of = w.weight.data();
  return true;
}

}  // namespace

int attach_half_weights(ModelWeights& weights) {
  if (!small_gemm_available()) return 0;  // only the vector kernel reads halves
  int attached = 0;
  auto attention = [&](AttentionWeights& a) {
    for (LinearWeights* l : {&a.q, &a.k, &a.v, &a.out}) attached += attach_half(*l);
  };
  for (EncoderLayerWeights& l : weights.encoder_layers) {
    attention(l.self_attn);
    attached += attach_half(l.ffn.fc1) + attach_half(l.ffn.fc2);
  }
  for (DecoderLayerWeights& l : weights.decoder_layers) {
    attention(l.self_attn);
    attention(l.cross_attn);
    attached += attach_half(l.ffn.fc1) + attach_half(l.ffn.fc2);
  }
  attached += attach_half(weights.generator);
  return attached;
}

}  // namespace sf
