#include "nn/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nn/kernels.h"
#include "nn/small_gemm.h"
#include "nn/softmax.h"
#include "util/error.h"
#include "util/parallel.h"

namespace sf {

void masked_softmax(const ConstMatRef& scores, const Mat& blocked, Mat& probs) {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  if (blocked.size() > 0 && (blocked.rows() != scores.rows() || blocked.cols() != scores.cols()))
    fail(ErrorKind::Shape, "masked_softmax", "mask " + shape_string({blocked.rows(), blocked.cols()}) +
                                                 " does not match scores " +
                                                 shape_string({scores.rows(), scores.cols()}));
  probs.resize(scores.rows(), scores.cols());
  // One row at a time, each read from scores once and then worked on while it is in cache (an output layer's row
  // of 6,000-32,000 logits is 24-128 KB; the whole (T, V) matrix is megabytes): the masked copy where there is a
  // mask, then softmax_row (nn/softmax.h). Rows are independent, so they are shared out between the pool's
  // threads; each row's numbers do not depend on which thread computed it.
  const Eigen::Index cols = scores.cols();
  const int grain = static_cast<int>(std::max<Eigen::Index>(1, 16384 / std::max<Eigen::Index>(cols, 1)));
  parallel_for(static_cast<int>(scores.rows()), grain, [&](int begin, int end) {
    for (Eigen::Index r = begin; r < end; ++r) {
      float* row = probs.row(r).data();
      const float* in = scores.row(r).data();
      if (blocked.size() > 0) {
        probs.row(r) = (blocked.row(r).array() > 0.5f).select(neg_inf, scores.row(r).array()).matrix();
        in = row;
      }
      // every cell blocked: attend to nothing (see attention.h)
      if (!softmax_row(in, row, static_cast<int>(cols))) probs.row(r).setZero();
    }
  });
}

void split_heads(const ConstMatRef& x, int n_heads, std::vector<Mat>& heads) {
  const Eigen::Index d = x.cols() / n_heads;
  heads.resize(static_cast<size_t>(n_heads));
  for (int h = 0; h < n_heads; ++h) heads[static_cast<size_t>(h)] = x.middleCols(h * d, d);
}

namespace {

void check_heads(std::span<const Mat> per_head, int n_heads, bool shared_allowed, const char* what) {
  const size_t n = per_head.size();
  if (n == 0 || n == static_cast<size_t>(n_heads) || (shared_allowed && n == 1)) return;
  fail(ErrorKind::Shape, "attend", std::string(what) + ": " + std::to_string(n) + " matrices for " +
                                       std::to_string(n_heads) + " heads");
}

}  // namespace

Mat AttentionMask::matrix(int head, Eigen::Index tq, Eigen::Index tk) const {
  if (const Mat* p = painted_for(head)) return *p;
  Mat m(tq, tk);
  for (Eigen::Index i = 0; i < tq; ++i)
    for (Eigen::Index j = 0; j < tk; ++j) m(i, j) = blocks(head, i, j) ? 1.0f : 0.0f;
  return m;
}

bool AttentionMask::blocks(int head, Eigen::Index query, Eigen::Index key) const {
  if (const Mat* p = painted_for(head)) return (*p)(query, key) > 0.5f;
  return (!key_blocked.empty() && key_blocked[static_cast<size_t>(key)]) ||
         (!query_blocked.empty() && query_blocked[static_cast<size_t>(query)]) ||
         (causal && key > query_positions[static_cast<size_t>(query)]);
}

AttentionMask AttentionMask::rows(const std::vector<int>& kept) const {
  AttentionMask out;
  out.key_blocked = key_blocked;
  out.causal = causal;
  out.blocked_row_uniform = blocked_row_uniform;
  for (int r : kept) out.query_positions.push_back(query_positions.empty() ? r : query_positions[static_cast<size_t>(r)]);
  for (int r : kept)
    if (!query_blocked.empty()) out.query_blocked.push_back(query_blocked[static_cast<size_t>(r)]);
  for (const Mat& p : painted) {
    Mat rows_of(p.size() > 0 ? static_cast<Eigen::Index>(kept.size()) : 0, p.cols());
    for (size_t i = 0; i < kept.size() && p.size() > 0; ++i) rows_of.row(static_cast<Eigen::Index>(i)) = p.row(kept[i]);
    out.painted.push_back(std::move(rows_of));
  }
  return out;
}

// Per-head tensors are B*H long and masks B: head index i is head i % H of sequence i / H's mask.
const AttentionMask* AttentionTrace::mask_of(size_t head_index, int& head) const {
  if (masks.empty() || head_index >= probs.size()) return nullptr;
  const size_t heads = probs.size() / masks.size();
  head = static_cast<int>(head_index % heads);
  return &masks[head_index / heads];
}

Mat AttentionTrace::mask_matrix(size_t head_index) const {
  int head = 0;
  const AttentionMask* mask = mask_of(head_index, head);
  return mask ? mask->matrix(head, probs[head_index].rows(), probs[head_index].cols()) : Mat();
}

bool AttentionTrace::blocked(size_t head_index, Eigen::Index query, Eigen::Index key) const {
  int head = 0;
  const AttentionMask* mask = mask_of(head_index, head);
  if (!mask) return false;
  const Mat& shape = probs[head_index];
  if (query < 0 || key < 0 || query >= shape.rows() || key >= shape.cols()) return false;  // no such cell
  return mask->blocks(head, query, key);
}

namespace {

// probs = softmax over the row's allowed cells of scale * scores (Tq, Tk) (blocked ones 0; a row with none allowed
// all 0): the cells up to `end` (a causal row's prefix), minus padding keys or the cells a painted row blocks.
void softmax_allowed(const Mat& scores, float scale, const AttentionMask& mask, const Mat* painted, Mat& probs) {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  const Eigen::Index tq = scores.rows(), tk = scores.cols();
  probs.resize(tq, tk);
  for (Eigen::Index i = 0; i < tq; ++i) {
    Eigen::Index end = tk;
    if (!painted && mask.causal) end = std::min<Eigen::Index>(tk, mask.query_positions[static_cast<size_t>(i)] + 1);
    auto row = probs.row(i);
    // A padding query's whole row is blocked: no softmax to take.
    const bool query_blocked = !painted && !mask.query_blocked.empty() && mask.query_blocked[static_cast<size_t>(i)];
    bool any_allowed = false;
    if (!query_blocked) {
      const float* in = scores.row(i).data();
      if (painted || !mask.key_blocked.empty()) {  // the row with its blocked cells at -inf
        row.head(end) = scores.row(i).head(end);
        for (Eigen::Index j = 0; j < end; ++j)
          if (painted ? (*painted)(i, j) > 0.5f : mask.key_blocked[static_cast<size_t>(j)]) row(j) = neg_inf;
        in = row.data();
      }
      any_allowed = softmax_row(in, row.data(), static_cast<int>(end), scale);
    }
    if (end < tk) row.tail(tk - end).setZero();
    if (!any_allowed) {  // every cell blocked: attend to nothing, or evenly to all (see the top of attention.h)
      if (mask.blocked_row_uniform) row.setConstant(1.0f / static_cast<float>(tk));
      else row.head(end).setZero();
    }
  }
}

}  // namespace

// From 2 to this many query rows attend() computes a head's scores and output row by row (matrix-vector products).
constexpr Eigen::Index kFewQueries = 8;

void attend(const ConstMatRef& q, const ConstMatRef& k, const ConstMatRef& v, int n_heads, float scale,
            const AttentionMask& mask, const std::vector<bool>& heads_on, std::span<const Mat> keep,
            MatRef heads_out, const AttendRecord& record) {
  const Eigen::Index tq = q.rows(), tk = k.rows(), c = q.cols(), d = c / n_heads;
  if (k.cols() != c || v.cols() != c || v.rows() != tk || heads_out.rows() != tq || heads_out.cols() != c)
    fail(ErrorKind::Shape, "attend",
         "q " + shape_string({tq, c}) + ", k " + shape_string({tk, k.cols()}) + ", v " +
             shape_string({v.rows(), v.cols()}) + ", out " + shape_string({heads_out.rows(), heads_out.cols()}));
  if ((!mask.key_blocked.empty() && static_cast<Eigen::Index>(mask.key_blocked.size()) != tk) ||
      (!mask.query_blocked.empty() && static_cast<Eigen::Index>(mask.query_blocked.size()) != tq) ||
      (mask.causal && static_cast<Eigen::Index>(mask.query_positions.size()) != tq) ||
      (!mask.painted.empty() && mask.painted.size() != static_cast<size_t>(n_heads)))
    fail(ErrorKind::Shape, "attend", "the mask does not match the attention " + shape_string({tq, tk}));
  for (int h = 0; h < n_heads; ++h)
    if (const Mat* p = mask.painted_for(h); p && (p->rows() != tq || p->cols() != tk))
      fail(ErrorKind::Shape, "attend", "the painted mask of head " + std::to_string(h + 1) + " (from 1) is " +
                                           shape_string({p->rows(), p->cols()}) + ", the attention " +
                                           shape_string({tq, tk}));
  check_heads(keep, n_heads, false, "dropout");
  // One head after another; an attention of some size (a traced pass, or a chunk of guesses, over a long sentence)
  // shares its heads out on the pool (each head writes its own record and columns; inside a parallel loop, as a
  // batch's sequences run, this runs serially).
  auto head = [&](int h) {
    thread_local Mat scores_scratch, probs_scratch, dropped;
    const size_t hs = static_cast<size_t>(h);
    Mat& scores = record.scores.empty() ? scores_scratch : record.scores[hs];
    Mat& probs = record.probs.empty() ? probs_scratch : record.probs[hs];
    scores.resize(tq, tk);
    // A few query rows (a decoding step, a chunk of guessed tokens): without the packing a general product spends
    // on such small operands, straight from the rows of q, k and v (small_gemm, where the build has it). The
    // scores are dot products of a query's and a key's D columns, 4 x 4 at a time; the output reads each row of
    // v once for all query rows. (Eigen's matrix-vector product per row reduced each 32-long dot product on its
    // own and read the keys once per query row: in a chunk check over a long sentence that took about as long as
    // all of the check's projections.) Without the vector kernel: row by row, a matrix-vector product each.
    // Many query rows (a traced pass, the encoder): from 64 keys (one panel) the head's keys packed as a weight
    // is (nn/small_gemm.h) and the scores from the packed kernel; the output from the rows of v as for a few rows.
    // 20-30% under Eigen's products at 64-255 rows of D = 32 (one thread, measured), whose packing costs as much
    // as the arithmetic at such a small D. Under 64 keys a panel would be mostly padding: Eigen's product there
    // (12-40 keys, a training batch's sentences: 0.3-1.7 us against 0.7-2.1 packed).
    const bool few = tq <= kFewQueries;
    const bool vector_kernel = small_gemm_available();
    // A causal mask (no painted one replacing it for this head) lets query row i see the keys up to its position
    // only. The softmax reads nothing past them and gives them 0, so groups of rows compute their scores (unless
    // the trace keeps every score) and their output over the keys up to the group's last position: a traced
    // pass's decoder self-attention does about half the work. A row the softmax may spread evenly over every key
    // (blocked_row_uniform) keeps them all.
    const Mat* painted = mask.painted_for(h);
    const bool prefix_only = mask.causal && !painted && !mask.blocked_row_uniform;
    // f(first, rows, keys) for groups of `group` query rows, each with the keys its rows read; all rows at once
    // with every key where there is no causal prefix or `every_key` is asked.
    auto by_groups = [&](Eigen::Index group, bool every_key, auto&& f) {
      if (!prefix_only || every_key) return f(Eigen::Index{0}, tq, static_cast<int>(tk));
      for (Eigen::Index first = 0; first < tq; first += group) {
        const Eigen::Index rows = std::min(group, tq - first);
        int last = 0;
        for (Eigen::Index i = first; i < first + rows; ++i)
          last = std::max(last, mask.query_positions[static_cast<size_t>(i)] + 1);
        f(first, rows, static_cast<int>(std::min<Eigen::Index>(tk, last)));
      }
    };
    if (vector_kernel && few) {
      small_gemm_xwt(q.data() + h * d, static_cast<int>(tq), static_cast<int>(d), q.outerStride(), k.data() + h * d,
                     static_cast<int>(tk), scores.data(), k.outerStride());
    } else if (vector_kernel && tk >= PackedWeights::kPanel) {
      thread_local PackedWeights keys;
      pack_weights(k.data() + h * d, static_cast<int>(tk), static_cast<int>(d), k.outerStride(), false, keys);
      // Groups of 48 rows: 8 register blocks of 6 (a panel is 64 keys). A trace keeps every score.
      by_groups(48, !record.scores.empty(), [&](Eigen::Index first, Eigen::Index rows, int keys_read) {
        small_gemm_packed(q.data() + first * q.outerStride() + h * d, static_cast<int>(rows), static_cast<int>(d),
                          q.outerStride(), keys, scores.data() + first * tk, nullptr, keys_read, tk);
      });
    } else {
      // (Tq, Tk) = q_h k_h^T, by the kernel set's Eigen (nn/kernels.h); a few rows one at a time
      kernels().x_wt(q.data() + h * d, tq, d, q.outerStride(), k.data() + h * d, tk, k.outerStride(), scores.data(),
                     few);
    }
    // q k^T is scaled as the softmax reads it; a trace keeps the scaled scores (the same floats the softmax saw).
    float softmax_scale = scale;
    if (!record.scores.empty()) {
      scores *= scale;
      softmax_scale = 1.0f;
    }
    softmax_allowed(scores, softmax_scale, mask, painted, probs);
    auto out = heads_out.middleCols(h * d, d);  // (Tq, D)
    if (!heads_on.empty() && !heads_on[hs]) {
      out.setZero();
    } else if (!keep.empty()) {
      dropped = probs.cwiseProduct(keep[hs]);
      kernels().x_w(dropped.data(), tq, tk, dropped.outerStride(), v.data() + h * d, d, v.outerStride(), out.data(),
                    out.outerStride(), false);
    } else if (vector_kernel) {
      // Groups of 16 rows: 4 register blocks of 4.
      by_groups(16, false, [&](Eigen::Index first, Eigen::Index rows, int keys_read) {
        small_gemm_xw(probs.data() + first * probs.outerStride(), static_cast<int>(rows), keys_read,
                      probs.outerStride(), v.data() + h * d, v.outerStride(), static_cast<int>(d),
                      out.data() + first * out.outerStride(), out.outerStride());
      });
    } else {  // (Tq, D) = P v_h, by the kernel set's Eigen; a few rows one at a time
      kernels().x_w(probs.data(), tq, tk, probs.outerStride(), v.data() + h * d, d, v.outerStride(), out.data(),
                    out.outerStride(), few);
    }
    if (!record.head_out.empty()) record.head_out[hs] = out;
  };
  // All heads together: below it the pool's hand-off costs more. A one-row decoding step over a long sentence
  // passes it (8 heads of 32 over 200 keys: 51k), and there its attention took as long as its projections.
  constexpr Eigen::Index kParallelMacs = 1 << 15;
  if (n_heads > 1 && n_heads * tq * tk * d >= kParallelMacs)
    parallel_for(n_heads, 1, [&](int begin, int end) {
      for (int h = begin; h < end; ++h) head(h);
    });
  else
    for (int h = 0; h < n_heads; ++h) head(h);
}

void attend_backward(const ConstMatRef& q, const ConstMatRef& k, const ConstMatRef& v, int n_heads, float scale,
                     std::span<const Mat> probs, std::span<const Mat> keep, const std::vector<bool>& heads_on,
                     const ConstMatRef& d_heads_out, MatRef dq, MatRef dk, MatRef dv) {
  const Eigen::Index tq = q.rows(), tk = k.rows(), d = q.cols() / n_heads;
  check_heads(keep, n_heads, false, "dropout");
  if (probs.size() != static_cast<size_t>(n_heads))
    fail(ErrorKind::Shape, "attend_backward", "the forward's probabilities of every head are needed");
  Mat dp(tq, tk), ds;
  for (int h = 0; h < n_heads; ++h) {
    const size_t hs = static_cast<size_t>(h);
    auto dq_h = dq.middleCols(h * d, d);
    auto dk_h = dk.middleCols(h * d, d);
    auto dv_h = dv.middleCols(h * d, d);
    if (!heads_on.empty() && !heads_on[hs]) {  // the head's output was replaced by zeros: nothing flows back
      dq_h.setZero();
      dk_h.setZero();
      dv_h.setZero();
      continue;
    }
    const Mat& p = probs[hs];
    const auto d_o = d_heads_out.middleCols(h * d, d);  // (Tq, D)
    dp.noalias() = d_o * v.middleCols(h * d, d).transpose();
    if (!keep.empty()) {
      const Mat dropped = p.cwiseProduct(keep[hs]);
      dv_h.noalias() = dropped.transpose() * d_o;
      dp.array() *= keep[hs].array();
    } else {
      dv_h.noalias() = p.transpose() * d_o;
    }
    const Vec row_dot = (dp.array() * p.array()).rowwise().sum();
    ds = p.array() * (dp.array().colwise() - row_dot.array());
    ds *= scale;
    dq_h.noalias() = ds * k.middleCols(h * d, d);
    dk_h.noalias() = ds.transpose() * q.middleCols(h * d, d);
  }
}

}  // namespace sf
