// Cross-entropy with label smoothing over the target vocabulary, as torch.nn.CrossEntropyLoss(
// ignore_index=pad, label_smoothing=eps):
//   q      = (1 - eps) * onehot(y) + eps / V                       the smoothed target distribution
//   loss_i = -sum_v q_v log softmax(z_i)_v                          for each position whose target is not pad
//   loss   = mean over those positions
//   dL/dz_i = (softmax(z_i) - q) / N                                (0 for pad positions)
#pragma once
#include <vector>

#include "util/tensor.h"

namespace sf {

struct LossResult {
  double loss = 0.0;        // the smoothed loss (what is minimised)
  double nll = 0.0;         // mean -log p(y): exp(nll) is the perplexity
  int tokens = 0;           // positions counted (target != pad)
};

// logits (N, V), targets (N). If dlogits is given it receives dL/dlogits (N, V).
LossResult label_smoothed_cross_entropy(const ConstMatRef& logits, const std::vector<int>& targets, int pad_id,
                                        float smoothing, Mat* dlogits);

}  // namespace sf
