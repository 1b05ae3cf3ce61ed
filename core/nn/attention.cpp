#include "nn/attention.h"

#include <cmath>
#include <limits>

#include "nn/linear.h"
#include "util/error.h"

namespace sf {

void masked_softmax(const ConstMatRef& scores, const Mat& blocked, Mat& probs) {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  if (blocked.size() > 0) {
    if (blocked.rows() != scores.rows() || blocked.cols() != scores.cols())
      fail(ErrorKind::Shape, "masked_softmax", "mask " + shape_string({blocked.rows(), blocked.cols()}) +
                                                   " does not match scores " +
                                                   shape_string({scores.rows(), scores.cols()}));
    probs = (blocked.array() > 0.5f).select(neg_inf, scores.array()).matrix();
  } else {
    probs = scores;
  }
  const Vec row_max = probs.rowwise().maxCoeff();  // (Tq)
  for (Eigen::Index r = 0; r < probs.rows(); ++r) {
    if (row_max(r) == neg_inf) {  // every cell blocked: attend to nothing (see attention.h)
      probs.row(r).setZero();
      continue;
    }
    probs.row(r).array() = (probs.row(r).array() - row_max(r)).exp();
    probs.row(r) /= probs.row(r).sum();
  }
}

void split_heads(const ConstMatRef& x, int n_heads, std::vector<Mat>& heads) {
  const Eigen::Index d = x.cols() / n_heads;
  heads.resize(static_cast<size_t>(n_heads));
  for (int h = 0; h < n_heads; ++h) heads[static_cast<size_t>(h)] = x.middleCols(h * d, d);
}

void attention_keys_values(const ConstMatRef& x_kv, const AttentionWeights& w, int n_heads, std::vector<Mat>& k,
                           std::vector<Mat>& v) {
  Mat proj;
  linear_forward(x_kv, w.k, proj);  // (Tk, C)
  split_heads(proj, n_heads, k);
  linear_forward(x_kv, w.v, proj);  // (Tk, C)
  split_heads(proj, n_heads, v);
}

void attention_from_keys_values(const ConstMatRef& x_q, const std::vector<Mat>& k, const std::vector<Mat>& v,
                                const AttentionWeights& w, int n_heads, std::vector<Mat> mask, const std::vector<bool>& head_on, AttentionTrace& t) {
  const Eigen::Index tq = x_q.rows(), c = x_q.cols(), d = c / n_heads;
  const float inv_sqrt_d = 1.0f / std::sqrt(static_cast<float>(d));
  Mat proj;
  linear_forward(x_q, w.q, proj);  // (Tq, C)
  split_heads(proj, n_heads, t.q);
  const size_t H = static_cast<size_t>(n_heads);
  t.scores.resize(H);
  t.probs.resize(H);
  t.head_out.resize(H);
  t.mask = std::move(mask);
  t.heads_out.resize(tq, c);
  static const Mat no_mask;
  for (size_t h = 0; h < H; ++h) {
    t.scores[h].resize(tq, k[h].rows());
    t.scores[h].noalias() = (t.q[h] * k[h].transpose()) * inv_sqrt_d;  // (Tq, Tk)
    masked_softmax(t.scores[h], t.mask.empty() ? no_mask : t.mask[h], t.probs[h]);
    t.head_out[h].resize(tq, d);
    if (head_on.empty() || head_on[h])
      t.head_out[h].noalias() = t.probs[h] * v[h];  // (Tq, D)
    else
      t.head_out[h].setZero();
    t.heads_out.middleCols(static_cast<Eigen::Index>(h) * d, d) = t.head_out[h];
  }
  linear_forward(t.heads_out, w.out, t.attn_out);  // (Tq, C)
}

void multi_head_attention_forward(const ConstMatRef& x_q, const ConstMatRef& x_kv, const AttentionWeights& w,
                                  int n_heads, std::vector<Mat> mask, const std::vector<bool>& head_on,
                                  AttentionTrace& t) {
  attention_keys_values(x_kv, w, n_heads, t.k, t.v);
  attention_from_keys_values(x_q, t.k, t.v, w, n_heads, std::move(mask), head_on, t);
}

}  // namespace sf
