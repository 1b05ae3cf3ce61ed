// Multi-head attention of "Attention Is All You Need" (section 3.2):
//   Q = x_q W_q^T + b_q      K = x_kv W_k^T + b_k      V = x_kv W_v^T + b_v            (Tq or Tk, C)
//   head h owns columns h*D .. h*D+D-1 of Q, K, V
//   scores_h = Q_h K_h^T / sqrt(D)                                                        (Tq, Tk)
//   probs_h  = softmax(scores_h + M_h)   M_h = -inf where the cell is blocked, 0 elsewhere  (Tq, Tk)
//   head_h   = probs_h V_h                                                                (Tq, D)
//   out      = concat_h(head_h) W_o^T + b_o                                               (Tq, C)
//
// A row whose cells are all blocked has no defined softmax (PyTorch gives NaN there). Here such a row gets
// all-zero probabilities, so its head output is zero: the query attends to nothing.
#pragma once
#include <vector>

#include "model/weights.h"
#include "util/tensor.h"

namespace sf {

struct AttentionTrace {
  std::vector<Mat> q;         // H x (Tq, D)
  std::vector<Mat> k;         // H x (Tk, D)
  std::vector<Mat> v;         // H x (Tk, D)
  std::vector<Mat> scores;    // H x (Tq, Tk) Q K^T / sqrt(D), before the mask
  std::vector<Mat> mask;      // H x (Tq, Tk) the mask as applied: 1 = blocked (-inf added), 0 = allowed
  std::vector<Mat> probs;     // H x (Tq, Tk) softmax(scores + mask)
  std::vector<Mat> head_out;  // H x (Tq, D)  probs V; zero for a head switched off
  Mat heads_out;              // (Tq, C) concatenation of the heads
  Mat attn_out;               // (Tq, C) heads_out W_o^T + b_o
};

// Row-wise softmax of scores with blocked cells (blocked > 0.5) removed; blocked may be empty (nothing
// blocked). Fully blocked rows give zeros. probs is resized.
void masked_softmax(const ConstMatRef& scores, const Mat& blocked, Mat& probs);

// x (N, C) -> H matrices (N, D): columns h*D .. h*D+D-1.
void split_heads(const ConstMatRef& x, int n_heads, std::vector<Mat>& heads);

// Projects x_kv to per-head K and V (the part that a KV cache keeps).
void attention_keys_values(const ConstMatRef& x_kv, const AttentionWeights& w, int n_heads, std::vector<Mat>& k,
                           std::vector<Mat>& v);

// From per-head K, V (H x (Tk, D), e.g. t.k / t.v or a KV cache): projects x_q to Q and runs the attention.
//   mask:    H x (Tq, Tk) blocked cells (1 / 0), or empty for nothing blocked
//   head_on: H flags; a head that is off contributes zeros to heads_out (its scores and probs are still traced)
void attention_from_keys_values(const ConstMatRef& x_q, const std::vector<Mat>& k, const std::vector<Mat>& v,
                                const AttentionWeights& w, int n_heads, std::vector<Mat> mask, const std::vector<bool>& head_on, AttentionTrace& t);

// The whole block: keys and values from x_kv, queries from x_q.
void multi_head_attention_forward(const ConstMatRef& x_q, const ConstMatRef& x_kv, const AttentionWeights& w,
                                  int n_heads, std::vector<Mat> mask, const std::vector<bool>& head_on,
                                  AttentionTrace& t);

}  // namespace sf
