// Attribution: how much each input token's embedding moved the log-probability of one predicted token.
//
//   f       = ln p(token | the inputs) at output row `row` (a decoder row predicts the token after its input; an
//             encoder-only model's row scores the token at its own position)
//   x_i     = input token i's embedding as the model uses it: tok_embed's row i (E[id] times the embedding scale,
//             before the position is added)
//   gradient x input:  a_i = sum_c x_ic * df/dx_ic
//
// The gradient comes from the core's own backward (transformer/passes.h model_backward, the one training runs)
// over the traced pass with the interventions given, so heads off, masks and positions off shape it as they shape
// the forward pass. Inputs: the source's S tokens and the decoder's T inputs (a decoder-only model's prompt and
// what it generated; none of these for an encoder-only model, whose inputs are its S tokens). A decoder row t
// cannot read the inputs after it: their attributions are exactly 0.
#pragma once
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "transformer/interventions.h"

namespace sf {

struct TokenAttribution {
  std::vector<float> source;  // (S): an encoder's inputs (empty for a decoder-only model)
  std::vector<float> target;  // (T): the decoder's inputs (empty for an encoder-only model)
  double f = 0;               // ln p(token) at the row
  double f_baseline = 0;      // integrated gradients: f with every token embedding 0 (the baseline)
};

// ErrorKind::Input for a row or token outside the pass; ErrorKind::Unsupported for a model with BERT's parts
// (token types, the embedding norm, the masked-LM head), which have no backward yet.
TokenAttribution gradient_x_input(const Config& config, const ModelWeights& weights, const std::vector<int>& source,
                                  const std::vector<int>& target, const Interventions& interventions, int row,
                                  int token);

// Integrated gradients (Sundararajan et al. 2017) with the zero baseline over all input tokens together:
//   a_i = sum_c x_ic * (1/N) sum_{k=1..N} df/dx_ic (k/N * x)      (the right Riemann sum of N steps)
// Completeness: sum_i a_i -> f(x) - f(0) as N grows (f_baseline is f(0)). The N steps, and the baseline, run as
// one batch of N + 1 sequences through the training pass and its backward (each sequence's token embeddings
// scaled by its step: EmbeddingTrace::token_scale). steps 1 .. kMaxIntegratedGradientSteps.
inline constexpr int kMaxIntegratedGradientSteps = 1024;
TokenAttribution integrated_gradients(const Config& config, const ModelWeights& weights,
                                      const std::vector<int>& source, const std::vector<int>& target,
                                      const Interventions& interventions, int row, int token, int steps);

}  // namespace sf
