// Choosing the next token from logits: greedy, and sampling with temperature, top-k and top-p (nucleus).
//   p_i = softmax(logits / temperature)_i
//   top-k: keep the k most likely tokens (k = 0: all)
//   top-p: then keep the smallest set of most likely tokens whose probability sums to >= p (p = 1: all)
//   renormalise the kept probabilities and draw one token with a seeded generator.
// Ties are broken towards the lower id, so results are reproducible.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "util/tensor.h"

namespace sf {

struct SamplingOptions {
  float temperature = 1.0f;  // > 0
  int top_k = 0;             // 0: no limit
  float top_p = 1.0f;        // in (0, 1]
};

// Throws ErrorKind::Input for a temperature <= 0, a negative top_k or top_p outside (0, 1].
void validate_sampling(const SamplingOptions& options);

// The index of the largest logit (the lowest such index on ties).
int argmax(const RowVec& logits);
// The ids of the k highest scores (logits, log-probabilities or probabilities), best first, ties towards the
// lower id; k is cut to the vocabulary. Beam search's candidates, the GUI's top-k lists.
std::vector<int> top_k_ids(const RowVec& scores, int k);

// The distribution sampling draws from (1, V): zero outside the kept set, summing to 1.
RowVec sampling_distribution(const RowVec& logits, const SamplingOptions& options);

// softmax and log softmax of a row (1, V).
RowVec softmax(const RowVec& logits);
RowVec log_softmax(const RowVec& logits);
// log_softmax(logits)(id), the same float, without the row: logits(id) - logsumexp(logits).
float log_softmax_at(const RowVec& logits, int id);

// std::mt19937_64 is specified exactly by the C++ standard, so a seed gives the same draws everywhere; the
// uniform number is built from its bits by hand for the same reason.
using Rng = std::mt19937_64;
double uniform01(Rng& rng);  // [0, 1)

// Draws an index from a distribution (1, V).
int draw(const RowVec& distribution, Rng& rng);

}  // namespace sf
