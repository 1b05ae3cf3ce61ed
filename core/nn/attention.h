// Scaled dot-product attention of "Attention Is All You Need" (section 3.2), all heads of one sequence at once:
//   head h owns columns h*D .. h*D+D-1 of q (Tq, C), k (Tk, C), v (Tk, C)
//   scores_h = q_h k_h^T * scale                     scale = 1/sqrt(D) in the paper      (Tq, Tk)
//   probs_h  = softmax(scores_h + M_h)               M_h = -inf where the cell is blocked (Tq, Tk)
//   out_h    = drop(probs_h) v_h                                                          (Tq, D)
// attend() is the only place this is computed: the traced pass, KV-cache steps, batched prefix passes and
// training all call it (the projections around it are in transformer/layers.h).
//
// A row whose cells are all blocked has no defined softmax (PyTorch gives NaN there). Here such a row gets
// all-zero probabilities, so its head output is zero: the query attends to nothing. A mask with
// blocked_row_uniform (the from-scratch family, whose code fills blocked cells with -1e20 instead of -inf) gives
// such a row 1/Tk in every cell, as that code computes.
#pragma once
#include <span>
#include <vector>

#include "util/tensor.h"

namespace sf {

// Which cells of one attention (Tq, Tk) are blocked, without a matrix per head: a key that is padding, a key after
// its query (causal), or, for a head with a painted mask, exactly what it paints (it replaces the rest).
struct AttentionMask {
  std::vector<uint8_t> key_blocked;    // (Tk) 1 = a padding key; empty: none
  std::vector<uint8_t> query_blocked;  // (Tq) 1 = a padding query, its whole row blocked (ReshapeHeads); empty: none
  bool causal = false;                 // key j blocked for query row i when j > query_positions[i]
  std::vector<int> query_positions;    // (Tq) each query row's position (used when causal)
  std::vector<Mat> painted;            // empty, or H matrices (Tq, Tk) 1 = blocked (an empty one: that head has none)
  bool blocked_row_uniform = false;    // a row with every cell blocked: 1/Tk everywhere (else all 0)

  bool blocks_nothing() const { return key_blocked.empty() && query_blocked.empty() && !causal && painted.empty(); }
  const Mat* painted_for(int head) const {
    return painted.empty() || painted[static_cast<size_t>(head)].size() == 0 ? nullptr : &painted[static_cast<size_t>(head)];
  }
  // The mask of `head` as a matrix (Tq, Tk), 1 = blocked: what the app's trace shows.
  Mat matrix(int head, Eigen::Index tq, Eigen::Index tk) const;
  // One cell of it: whether `head` blocks key `key` for query row `query`.
  bool blocks(int head, Eigen::Index query, Eigen::Index key) const;
  // The same rows `rows` of the queries only (a pass that queries some rows of a sequence).
  AttentionMask rows(const std::vector<int>& rows) const;
};

// One attention block's record, over a batch of B sequences (B = 1 for the traced pass the app shows). Per-head
// tensors are B*H matrices, sequence b's head h at index b*H + h. Which members are filled depends on what the
// caller asked to record (transformer/layers.h, Record): the app's trace all of them, training what the
// backward reads (queries, keys, values, probs, keep).
struct AttentionTrace {
  Mat queries;                // (B*Tq, C) x_q W_q^T + b_q
  Mat keys;                   // (B*Tk, C) x_kv W_k^T + b_k
  Mat values;                 // (B*Tk, C) x_kv W_v^T + b_v
  std::vector<Mat> q;         // B*H x (Tq, D) the heads' columns of queries (the app's record only)
  std::vector<Mat> k;         // B*H x (Tk, D)
  std::vector<Mat> v;         // B*H x (Tk, D)
  std::vector<Mat> scores;    // B*H x (Tq, Tk) q k^T * scale, before the mask
  std::vector<AttentionMask> masks;  // B: the cells sequence b's heads blocked, as applied (the app's record only):
                                     // mask_matrix() and blocked() read them
  std::vector<Mat> probs;     // B*H x (Tq, Tk) softmax(scores + mask)
  std::vector<Mat> keep;      // B*H x (Tq, Tk) dropout scale of each probability (0 or 1/(1-p)); empty when off
  std::vector<Mat> head_out;  // B*H x (Tq, D) drop(probs) v; zero for a head switched off
  Mat heads_out;              // (B*Tq, C) concatenation of the heads
  Mat attn_out;               // (B*Tq, C) heads_out W_o^T + b_o

  // The mask head b*H + h ran with, (Tq, Tk): 1 = blocked (-inf added), 0 = allowed; empty where masks were not
  // recorded. Made when asked: a long sentence's maps are megabytes, and most of them are never drawn.
  Mat mask_matrix(size_t head_index) const;
  // One cell of it (false for a cell outside the map).
  bool blocked(size_t head_index, Eigen::Index query, Eigen::Index key) const;

 private:
  const AttentionMask* mask_of(size_t head_index, int& head) const;  // null where none was recorded
};

// Row-wise softmax of scores with blocked cells (blocked > 0.5) removed; blocked may be empty (nothing
// blocked). Fully blocked rows give zeros. probs is resized.
void masked_softmax(const ConstMatRef& scores, const Mat& blocked, Mat& probs);

// x (N, C) -> H matrices (N, D): columns h*D .. h*D+D-1.
void split_heads(const ConstMatRef& x, int n_heads, std::vector<Mat>& heads);

// What attend() keeps besides its output, per head (each span empty: not kept, else H matrices).
struct AttendRecord {
  std::span<Mat> scores;    // (Tq, Tk) before the mask
  std::span<Mat> probs;     // (Tq, Tk)
  std::span<Mat> head_out;  // (Tq, D)
};

// The attention of one sequence, every head:
//   mask:     the blocked cells (AttentionMask)
//   heads_on: H flags, or empty for all on; a head that is off gives zeros (its scores and probs are still
//             computed and recorded: the app shows what the head would have done)
//   keep:     dropout scales (Tq, Tk) per head (training), or empty
// heads_out (Tq, C) is written. The softmax runs over the allowed cells of each row only (a causal row's
// prefix), blocked cells get probability 0.
void attend(const ConstMatRef& q, const ConstMatRef& k, const ConstMatRef& v, int n_heads, float scale,
            const AttentionMask& mask, const std::vector<bool>& heads_on, std::span<const Mat> keep,
            MatRef heads_out, const AttendRecord& record = {});

// The adjoint of attend() for one sequence, from its recorded probs (and keep):
//   dV = drop(P)^T dO     dP = (dO V^T) * keep     dS = P * (dP - rowsum(dP * P)) * scale
//   dQ = dS K             dK = dS^T Q
// dq (Tq, C), dk, dv (Tk, C) are written. Heads that were off get zero gradients.
void attend_backward(const ConstMatRef& q, const ConstMatRef& k, const ConstMatRef& v, int n_heads, float scale,
                     std::span<const Mat> probs, std::span<const Mat> keep, const std::vector<bool>& heads_on,
                     const ConstMatRef& d_heads_out, MatRef dq, MatRef dk, MatRef dv);

}  // namespace sf
