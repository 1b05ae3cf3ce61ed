#include "decode/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "nn/softmax.h"
#include "util/error.h"

namespace sf {

void validate_sampling(const SamplingOptions& o) {
  if (!(o.temperature > 0.0f) || !std::isfinite(o.temperature))
    fail(ErrorKind::Input, "sampling", "temperature must be positive, got " + std::to_string(o.temperature));
  if (o.top_k < 0) fail(ErrorKind::Input, "sampling", "top_k must be >= 0, got " + std::to_string(o.top_k));
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
    fail(ErrorKind::Input, "sampling", "top_p must be in (0, 1], got " + std::to_string(o.top_p));
}

namespace {
// The first cell of row[0..n) equal to `value`, or n when there is none.
Eigen::Index find_first(const float* row, Eigen::Index n, float value) {
  Eigen::Index j = 0;
#if defined(__AVX512F__)
  const __m512 v = _mm512_set1_ps(value);
  for (; j + 16 <= n; j += 16)
    if (const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_loadu_ps(row + j), v, _CMP_EQ_OQ))
      return j + __builtin_ctz(hit);
#endif
  for (; j < n; ++j)
    if (row[j] == value) return j;
  return n;
}
}  // namespace

int argmax(const RowVec& logits) {
  // The largest value by Eigen's vectorised maximum, then the first cell equal to it: the index a scan for the
  // first maximum gives, in a fraction of its time (Eigen's maxCoeff with an index is scalar; greedy decoding and
  // each guessed token of a re-decoding ask it of 6,000-32,000 logits). A NaN maximum: that scan.
  if (logits.size() == 0) return 0;
  const float max = logits.maxCoeff();
  if (!std::isnan(max)) return static_cast<int>(find_first(logits.data(), logits.size(), max));  // max is a cell
  Eigen::Index best = 0;
  logits.maxCoeff(&best);  // first maximum
  return static_cast<int>(best);
}

RowVec softmax(const RowVec& logits) {
  RowVec p(logits.size());
  // nn/softmax.h, as the trace's probabilities; every logit -inf (every token banned): nothing to draw from, all 0.
  if (!softmax_row(logits.data(), p.data(), static_cast<int>(logits.size()))) p.setZero();
  return p;
}

namespace {
float log_sum_exp(const RowVec& logits) {
  const float m = logits.maxCoeff();
  return m + std::log((logits.array() - m).exp().sum());
}
}  // namespace

RowVec log_softmax(const RowVec& logits) { return (logits.array() - log_sum_exp(logits)).matrix(); }

float log_softmax_at(const RowVec& logits, int id) { return logits(id) - log_sum_exp(logits); }

std::vector<int> top_k_ids(const RowVec& scores, int k) {
  std::vector<int> order(static_cast<size_t>(scores.size()));
  std::iota(order.begin(), order.end(), 0);
  const auto n = static_cast<std::ptrdiff_t>(std::clamp<Eigen::Index>(k, 0, scores.size()));
  std::partial_sort(order.begin(), order.begin() + n, order.end(),
                    [&](int a, int b) { return scores(a) > scores(b) || (scores(a) == scores(b) && a < b); });
  order.resize(static_cast<size_t>(n));
  return order;
}

RowVec sampling_distribution(const RowVec& logits, const SamplingOptions& o) {
  validate_sampling(o);
  const Eigen::Index v = logits.size();
  const RowVec scaled = logits / o.temperature;
  const RowVec p = softmax(scaled);
  // Order by probability, descending; ties by id.
  std::vector<int> order(static_cast<size_t>(v));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p(a) > p(b); });
  size_t keep = order.size();
  if (o.top_k > 0) keep = std::min(keep, static_cast<size_t>(o.top_k));
  if (o.top_p < 1.0f) {
    double cumulative = 0.0;
    for (size_t i = 0; i < keep; ++i) {
      cumulative += p(order[i]);
      if (cumulative >= o.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  RowVec kept = RowVec::Zero(v);
  for (size_t i = 0; i < keep; ++i) kept(order[i]) = p(order[i]);
  kept /= kept.sum();
  return kept;
}

double uniform01(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int draw(const RowVec& distribution, Rng& rng) {
  const double u = uniform01(rng);
  double cumulative = 0.0;
  int last_nonzero = 0;
  for (Eigen::Index i = 0; i < distribution.size(); ++i) {
    if (distribution(i) <= 0.0f) continue;
    last_nonzero = static_cast<int>(i);
    cumulative += distribution(i);
    if (u < cumulative) return static_cast<int>(i);
  }
  return last_nonzero;  // rounding left u just above the total
}

}  // namespace sf
