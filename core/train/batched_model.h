// The training pass: the Transformer's forward over a padded batch, recording what the backward needs, and
// the backward beside it. Sentences are stacked as rows, (B*S, C) for the source and (B*T, C) for the target,
// so every linear layer is one large matrix product; attention runs per sentence and head, in parallel.
//
// It computes the same function as the traced single-sentence forward (transformer/forward.h) when dropout
// is off (tested), and adds what only training needs: dropout (PyTorch's placement: on the embedding sum,
// the attention probabilities, the feed-forward hidden layer and each sublayer's output), padded batches, the
// loss, and gradients for every weight.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "nn/layer_norm.h"
#include "train/batching.h"
#include "train/loss.h"
#include "util/tensor.h"

namespace sf {

struct DropoutSettings {
  float p = 0.0f;       // probability of dropping an element (0: off, e.g. for evaluation)
  uint64_t seed = 0;    // with `step`, fixes every mask: a run is reproducible whatever the thread count
  uint64_t step = 0;
};

// Multi-head attention over a batch: queries (B*Tq, C), keys/values (B*Tk, C).
struct BatchAttentionTrace {
  Mat q, k, v;          // (B*Tq, C), (B*Tk, C), (B*Tk, C); head h owns columns h*D .. h*D+D-1
  Mat probs;            // (B*H*Tq, Tk) softmax(QK^T/sqrt(D) + mask), rows ordered (b, h, i)
  Mat probs_keep;       // (B*H*Tq, Tk) dropout scale of each probability (0 or 1/(1-p)); empty when off
  Mat heads_out;        // (B*Tq, C) concatenated heads
  Mat out;              // (B*Tq, C) after W_o
};

// One sublayer with its residual connection and layer norm ("Add & Norm"):
//   post-norm: y = LN(x + drop(f(x)))        pre-norm: y = x + drop(f(LN(x)))
struct ResidualTrace {
  Mat x;                // (N, C) the block's input
  LayerNormTrace norm;  // post: LN of sum; pre: LN of x
  Mat sum;              // (N, C) post-norm only: x + drop(f), the norm's input
  Mat keep;             // (N, C) dropout scale per element (0 or 1/(1-p)); empty when dropout is off
};

struct BatchFeedForwardTrace {
  Mat hidden_pre;       // (N, F) before the activation
  Mat hidden;           // (N, F) after the activation and dropout
  Mat keep;             // (N, F) dropout scale, empty when off
};

struct BatchEncoderLayerTrace {
  ResidualTrace attn_block, ffn_block;
  BatchAttentionTrace self_attn;
  BatchFeedForwardTrace ffn;
};

struct BatchDecoderLayerTrace {
  ResidualTrace self_block, cross_block, ffn_block;
  BatchAttentionTrace self_attn, cross_attn;
  BatchFeedForwardTrace ffn;
};

struct BatchTrace {
  int batch = 0, source_length = 0, target_length = 0;  // B, S, T
  Mat src_keep, tgt_keep;                               // (B*S, C), (B*T, C) embedding dropout, or empty
  std::vector<BatchEncoderLayerTrace> encoder;
  Mat encoder_stack_out;                                // (B*S, C) the last encoder layer's output
  LayerNormTrace encoder_norm;                          // when config.encoder_final_norm
  Mat encoder_out;                                      // (B*S, C) after the final norm, if any
  std::vector<BatchDecoderLayerTrace> decoder;
  Mat decoder_stack_out;                                // (B*T, C) the last decoder layer's output
  LayerNormTrace decoder_norm;                          // when config.decoder_final_norm
  Mat decoder_out;                                      // (B*T, C) after the final norm, if any
  Mat logits;                                           // (B*T, Vt)
};

// Forward over the batch, the loss against batch.target_out (label smoothing `smoothing`), and, when
// dlogits is given, dL/dlogits for batch_backward.
LossResult batch_forward(const Config& config, const ModelWeights& weights, const Batch& batch,
                         const DropoutSettings& dropout, float smoothing, BatchTrace& trace, Mat* dlogits);

// Accumulates dL/dweights into grads (same shapes as weights, e.g. from zeros_like).
void batch_backward(const Config& config, const ModelWeights& weights, const Batch& batch, const BatchTrace& trace,
                    const Mat& dlogits, ModelWeights& grads);

}  // namespace sf
