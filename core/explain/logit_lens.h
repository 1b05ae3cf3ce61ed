// The logit lens (nostalgebraist, 2020): what the model would predict if its last stack stopped after layer l.
// Everything that follows the last layer is applied to layer l's output instead: the stack's final norm where the
// model has one (GPT-2's ln_f, a pre-norm model's), then the output head (the generator; BERT's masked-LM
// transform first). Layer L-1's lens is the model's own logits (tested equal); the earlier layers' show how the
// prediction forms on the way up the residual stream.
//
// The last stack is the decoder for translators and decoder-only models (rows: the decoder's input positions,
// row t predicting token t+1) and the encoder for encoder-only models (row s scoring the token at position s).
// Read off a trace that holds every layer (a traced pass: transformer/forward.h); no second forward pass.
#pragma once
#include <atomic>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "transformer/interventions.h"  // AttentionKind
#include "transformer/trace.h"
#include "util/tensor.h"

namespace sf {

struct LogitLens {
  AttentionKind stack = AttentionKind::Decoder;  // Encoder for an encoder-only model, else Decoder
  std::vector<Mat> logits;                       // one per layer of that stack: (T, V) (encoder-only: (S, V))
};

// The lens of every layer of the trace's last stack. ErrorKind::Input where the trace lacks that stack's layers
// (an encoder pass alone for a translator) or holds rows of several sentences (a training batch).
LogitLens logit_lens(const Config& config, const ModelWeights& weights, const Trace& trace);

// The lens of one layer (0-based) of the last stack: (rows, V).
Mat logit_lens_layer(const Config& config, const ModelWeights& weights, const Trace& trace, int layer);

// The trace file's name of a layer's lens: "logit_lens.dec.2" (layers from 0, as docs/trace.md's names).
std::string logit_lens_name(AttentionKind stack, int layer);

// The lens of any rows of the last stack's residual stream x (N, C): (N, V).
Mat logit_lens_of(const Config& config, const ModelWeights& weights, const Mat& x);

// The outputs of the trace's last stack, layer by layer ((rows, C) each): what logit_lens_of reads. A copy, for
// work that outlives the trace (the app's view computes off the frame thread).
std::vector<Mat> last_stack_outputs(const Config& config, const Trace& trace);

// The lens as the app shows it, small enough to keep: for every layer and row the k likeliest tokens and their
// probabilities (softmax of the lens's row), and the probability of one given token per row: the token the model
// finally chose (or was given) there, -1 for none.
struct LogitLensTop {
  int layers = 0, rows = 0, k = 0;
  std::vector<int> ids;       // (layers, rows, k), likeliest first
  std::vector<float> probs;   // (layers, rows, k)
  std::vector<float> chosen;  // (layers, rows): p(chosen token of the row) at that layer; -1 where none is given
  int id(int layer, int row, int i) const { return ids[static_cast<size_t>((layer * rows + row) * k + i)]; }
  float p(int layer, int row, int i) const { return probs[static_cast<size_t>((layer * rows + row) * k + i)]; }
  float chosen_p(int layer, int row) const { return chosen[static_cast<size_t>(layer * rows + row)]; }
};
// From the layer outputs (last_stack_outputs) and the chosen token of each row (chosen_ids: one per row, -1 for
// none); k at most the vocabulary. Stops early, returning what it has (layers < outputs.size()), once *cancelled.
LogitLensTop logit_lens_top(const Config& config, const ModelWeights& weights, const std::vector<Mat>& outputs,
                            const std::vector<int>& chosen_ids, int k, const std::atomic<bool>* cancelled = nullptr);

}  // namespace sf
