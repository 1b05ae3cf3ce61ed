// Attribution: how much each input token moved one predicted token.
//
//   f       = ln p(token | the inputs) at output row `row` (a decoder row predicts the token after its input; an
//             encoder-only model's row scores the token at its own position)
//   x_i     = input token i's embedding as the model uses it: tok_embed's row i (E[id] times the embedding scale,
//             before the position, and BERT's token type, are added)
//   gradient x input:  a_i = sum_c x_ic * df/dx_ic
//
// The gradient comes from the core's own backward (transformer/passes.h model_backward, the one training runs)
// over the traced pass with the interventions given, so heads off, masks and positions off shape it as they shape
// the forward pass. Inputs: the source's S tokens and the decoder's T inputs (a decoder-only model's prompt and
// what it generated; none of these for an encoder-only model, whose inputs are its S tokens). A decoder row t
// cannot read the inputs after it: their attributions are exactly 0.
//
// Attention rollout (Abnar & Zuidema 2020) reads the attention maps alone, no gradient, and ignores which token
// is scored. Each self-attention layer l mixes the rows as A~_l = 0.5 A_l + 0.5 I, A_l the mean over the heads
// that are on (the identity for the residual stream; rows still sum to 1); a stack's rollout is the product
// R = A~_L ... A~_1, row i: how much of input j reaches position i. Stepformer's extension to a decoder with
// cross-attention: each decoder position carries D (T x T, over the decoder's inputs, from the identity) and
// X (T x S, over the source, from 0). A self-attention sublayer maps both through A~_self (D <- A~ D, X <- A~ X);
// a cross-attention sublayer keeps half on the residual path and brings half from the encoder through the mean
// cross-attention map C (T x S) and the encoder's rollout R_enc: X <- 0.5 X + 0.5 C R_enc, D <- 0.5 D. Every row
// of [X D] sums to 1 throughout (tested): a share of the position, not a signed effect. docs/trace.md has it too.
#pragma once
#include <atomic>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "transformer/interventions.h"
#include "transformer/trace.h"
#include "util/tensor.h"

namespace sf {

struct TokenAttribution {
  std::vector<float> source;  // (S): an encoder's inputs (empty for a decoder-only model)
  std::vector<float> target;  // (T): the decoder's inputs (empty for an encoder-only model)
  double f = 0;               // ln p(token) at the row
  double f_baseline = 0;      // integrated gradients: f with every token embedding 0 (the baseline)
};

// ErrorKind::Input for a row or token outside the pass; ErrorKind::Unsupported for a model whose parts have no
// backward (the from-scratch family's reshape_heads attention).
TokenAttribution gradient_x_input(const Config& config, const ModelWeights& weights, const std::vector<int>& source,
                                  const std::vector<int>& target, const Interventions& interventions, int row,
                                  int token);

// Integrated gradients (Sundararajan et al. 2017) with the zero baseline over all input tokens together:
//   a_i = sum_c x_ic * (1/N) sum_{k=1..N} df/dx_ic (k/N * x)      (the right Riemann sum of N steps)
// Completeness: sum_i a_i -> f(x) - f(0) as N grows (f_baseline is f(0)). The N steps, and the baseline, run as
// batches of copies of the sentence through the training pass and its backward (each copy's token embeddings
// scaled by its step: EmbeddingTrace::token_scale), as many copies to a batch as kAttributionBatchRows allows.
// steps 1 .. kMaxIntegratedGradientSteps.
inline constexpr int kMaxIntegratedGradientSteps = 1024;
inline constexpr int kAttributionBatchRows = 4096;  // token rows per batched pass (a batch's memory: rows x ~40 C)
TokenAttribution integrated_gradients(const Config& config, const ModelWeights& weights,
                                      const std::vector<int>& source, const std::vector<int>& target,
                                      const Interventions& interventions, int row, int token, int steps);

enum class AttributionMethod { GradientXInput, IntegratedGradients, Rollout };
// "gxi", "ig", "rollout" (the CLI's and the app's names); parse: ErrorKind::Input naming the three for another.
const char* to_string(AttributionMethod method);
AttributionMethod parse_attribution_method(const std::string& text);

// Every row of a pass at once: row r's f scores tokens[r] (-1: the row is skipped, its values 0 and f NaN).
//   values (rows, S + T): row r's attributions to the S source tokens, then to the T decoder inputs
//   rows = T for a model with a decoder (tokens.size() == target.size()), S for an encoder-only model
// Gradient x input runs its rows as one batch of copies (chunked by kAttributionBatchRows); integrated gradients
// one batch of N + 1 copies per row; rollout reads one traced pass (f still the row's ln p(token)).
struct AttributionMap {
  AttributionMethod method = AttributionMethod::GradientXInput;
  int source_length = 0, target_length = 0;  // S, T: the columns
  Mat values;                                 // (rows, S + T)
  std::vector<int> tokens;                    // (rows) the token each row scores
  std::vector<double> f, f_baseline;          // (rows) ln p(token); integrated gradients' f(0), else NaN
  int rows() const { return static_cast<int>(values.rows()); }
  bool complete = true;                       // false where *cancelled stopped it: rows not reached are 0
};
AttributionMap attribute_rows(const Config& config, const ModelWeights& weights, const std::vector<int>& source,
                              const std::vector<int>& target, const Interventions& interventions,
                              const std::vector<int>& tokens, AttributionMethod method, int steps = 32,
                              const std::atomic<bool>* cancelled = nullptr);

// The mean over the heads that are on of one layer's attention maps in a traced pass of one sentence: (Tq, Tk);
// zero where every head is off. What the app sets beside an attribution: the last layer's cross-attention (a
// translator) or self-attention (the other shapes). ErrorKind::Input where the trace lacks those maps.
Mat mean_attention(const Config& config, const Trace& trace, AttentionKind kind, int layer);

// Attention rollout of a traced pass of one sentence (above): (rows, S + T), as attribute_rows lays it out.
// ErrorKind::Input where the trace lacks the attention maps (not a traced pass) or holds several sentences.
Mat attention_rollout(const Config& config, const Trace& trace);

}  // namespace sf
