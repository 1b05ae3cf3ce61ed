// Where each stage's input lives in the trace, so that a panel can show the input beside the output. The
// forward pass (core/transformer/forward.cpp) records every output; an input is the output of the step before,
// which depends on the norm placement:
//   post-norm (the paper):  attention reads the layer's input x;        the feed-forward reads norm1 (norm2 in
//                           the decoder); cross-attention reads norm1
//   pre-norm (norm_first):  attention reads LN(x) = norm1;              the feed-forward reads norm2 (norm3);
//                           cross-attention reads norm2
// Every pointer points into the trace and is valid while it is.
#pragma once
#include <string>
#include <vector>

#include "model/config.h"
#include "transformer/trace.h"

namespace sf::gui {

// The rows the queries are projected from (Tq, C) and the rows keys and values are projected from (Tk, C).
struct AttentionInputs {
  const Mat* queries_from = nullptr;
  const Mat* keys_from = nullptr;
};
AttentionInputs attention_inputs(const Config& config, const Trace& trace, AttentionKind kind, int layer);

// The weights of an attention block.
const AttentionWeights& attention_weights(const ModelWeights& weights, AttentionKind kind, int layer);

// One residual block of a layer: y = LN(x + Sublayer(x)) (post) or y = x + Sublayer(LN(x)) (pre).
struct ResidualBlock {
  const char* name = "";                 // "after self-attention", ...
  const Mat* input = nullptr;            // (N, C) x, the block's input (what the residual carries)
  const Mat* sublayer_out = nullptr;     // (N, C) Sublayer(x) (post) or Sublayer(LN(x)) (pre)
  const Mat* sum = nullptr;              // (N, C) x + the sublayer's output
  const LayerNormTrace* norm = nullptr;  // post: LN(sum), the block's output; pre: LN(x), the sublayer's input
};
std::vector<ResidualBlock> residual_blocks(const Config& config, const Trace& trace, bool encoder, int layer);

// Row labels of one head of a from-scratch model (config.h, AttentionStyle::ReshapeHeads), whose rows are pieces
// of tokens: row i of head h is piece h*T + i of the flattened (T, C) sequence, columns k*D .. k*D+D-1 of token
// (h*T + i) / H with k = (h*T + i) % H, labelled "token [k]".
std::vector<std::string> reshaped_head_labels(const std::vector<std::string>& tokens, int head, int n_heads);

// The rows the feed-forward network reads (N, C).
const Mat* feed_forward_input(const Config& config, const Trace& trace, bool encoder, int layer);

}  // namespace sf::gui
