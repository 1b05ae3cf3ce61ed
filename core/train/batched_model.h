// The training pass: the Transformer's forward over a padded batch of B sentences, and its backward. It is the
// encoder and decoder passes of transformer/passes.h, the very layers the app's traced pass runs, over B
// sequences stacked as rows ((B*S, C) for the source, (B*T, C) for the target: every linear layer is one large
// matrix product; attention runs per sentence, in parallel), with what only training adds: dropout (PyTorch's
// placement: the embedding sum, the attention probabilities, the feed-forward hidden layer and each sublayer's
// output), padding (pad keys blocked), the label-smoothed loss, and every weight's gradient.
//
// With dropout off it computes, for each sentence, the traced forward's logits (tested).
#pragma once
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "train/batching.h"
#include "train/loss.h"
#include "transformer/layers.h"  // DropoutSettings
#include "transformer/trace.h"
#include "util/tensor.h"

namespace sf {

// The record of one training pass: the trace of B sentences stacked as rows (trace.h; attention per (b, h) at
// b*H + h), with the batch's sizes.
struct BatchTrace : Trace {
  int batch = 0, source_length = 0, target_length = 0;  // B, S, T
};

// The checks of a batch against the model (ErrorKind::Input naming `where`): not empty, no sequence longer than
// config.max_positions, arrays of the batch's sizes, every id inside its vocabulary. batch_forward and the GPU's
// train_step (backend/cuda_model.h) make them first.
void check_batch(const Config& config, const Batch& batch, const char* where);

// Forward over the batch, the loss against batch.target_out (label smoothing `smoothing`), and, when
// dlogits is given, dL/dlogits for batch_backward.
LossResult batch_forward(const Config& config, const ModelWeights& weights, const Batch& batch,
                         const DropoutSettings& dropout, float smoothing, BatchTrace& trace, Mat* dlogits);

// Accumulates dL/dweights into grads (same shapes as weights, e.g. from zeros_like).
void batch_backward(const Config& config, const ModelWeights& weights, const Batch& batch, const BatchTrace& trace,
                    const Mat& dlogits, ModelWeights& grads);

}  // namespace sf
