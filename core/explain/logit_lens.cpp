#include "explain/logit_lens.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "transformer/layers.h"
#include "util/error.h"

namespace sf {

namespace {

// The rows layer `layer` of the last stack wrote (its residual stream after the layer), (N, C).
const Mat& layer_output(const Config& config, const Trace& trace, int layer) {
  if (config.has_decoder()) return trace.decoder[static_cast<size_t>(layer)].out;
  return trace.encoder[static_cast<size_t>(layer)].out;
}

int last_stack_layers(const Config& config, const Trace& trace) {
  return static_cast<int>(config.has_decoder() ? trace.decoder.size() : trace.encoder.size());
}

}  // namespace

Mat logit_lens_layer(const Config& config, const ModelWeights& weights, const Trace& trace, int layer) {
  const int layers = last_stack_layers(config, trace);
  if (trace.sequences != 1)
    fail(ErrorKind::Input, "logit_lens", "a trace of one sentence is read, not a batch of " +
                                             std::to_string(trace.sequences));
  if (layers == 0)
    fail(ErrorKind::Input, "logit_lens", std::string("the trace holds no ") +
                                             (config.has_decoder() ? "decoder" : "encoder") + " layers to read");
  if (layer < 0 || layer >= layers)
    fail(ErrorKind::Input, "logit_lens", "layer " + std::to_string(layer) + " of a stack of " +
                                             std::to_string(layers) + " (layers count from 0)");
  return logit_lens_of(config, weights, layer_output(config, trace, layer));
}

Mat logit_lens_of(const Config& config, const ModelWeights& weights, const Mat& x) {
  // What follows the last layer in the pass (transformer/passes.cpp), in the same functions, so the last layer's
  // lens is the pass's own logits: the final norm (or nothing), then the output head.
  const bool decoder = config.has_decoder();
  LayerNormTrace norm;
  Mat normed;  // (N, C)
  final_norm_forward(config, decoder ? config.decoder_final_norm : config.encoder_final_norm,
                     decoder ? weights.decoder_norm : weights.encoder_norm, x, norm, normed);
  OutputHeadTrace head;
  Mat logits;  // (N, V)
  output_head_forward(config, weights, normed, head, logits);
  return logits;
}

std::vector<Mat> last_stack_outputs(const Config& config, const Trace& trace) {
  std::vector<Mat> out;
  for (int l = 0; l < last_stack_layers(config, trace); ++l) out.push_back(layer_output(config, trace, l));
  return out;
}

LogitLensTop logit_lens_top(const Config& config, const ModelWeights& weights, const std::vector<Mat>& outputs,
                            const std::vector<int>& chosen_ids, int k, const std::atomic<bool>* cancelled) {
  LogitLensTop top;
  top.rows = outputs.empty() ? 0 : static_cast<int>(outputs[0].rows());
  if (static_cast<int>(chosen_ids.size()) != top.rows)
    fail(ErrorKind::Input, "logit_lens_top", std::to_string(chosen_ids.size()) + " chosen tokens for " +
                                                 std::to_string(top.rows) + " rows");
  for (const Mat& x : outputs) {
    if (cancelled && cancelled->load()) break;
    const Mat logits = logit_lens_of(config, weights, x);  // (rows, V)
    const int V = static_cast<int>(logits.cols());
    top.k = std::clamp(k, 1, V);
    for (int r = 0; r < top.rows; ++r) {
      // softmax of the row (max subtracted), in double: the small probabilities stay exact enough to print
      const auto row = logits.row(r);
      const float m = row.maxCoeff();
      double sum = 0;
      for (int v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row(v) - m));
      std::vector<int> order(static_cast<size_t>(V));
      for (int v = 0; v < V; ++v) order[static_cast<size_t>(v)] = v;
      std::partial_sort(order.begin(), order.begin() + top.k, order.end(), [&](int a, int b) {
        return row(a) > row(b) || (row(a) == row(b) && a < b);
      });
      for (int i = 0; i < top.k; ++i) {
        const int id = order[static_cast<size_t>(i)];
        top.ids.push_back(id);
        top.probs.push_back(static_cast<float>(std::exp(static_cast<double>(row(id) - m)) / sum));
      }
      const int c = chosen_ids[static_cast<size_t>(r)];
      top.chosen.push_back(c >= 0 && c < V ? static_cast<float>(std::exp(static_cast<double>(row(c) - m)) / sum) : -1.0f);
    }
    ++top.layers;
  }
  return top;
}

LogitLens logit_lens(const Config& config, const ModelWeights& weights, const Trace& trace) {
  LogitLens lens;
  lens.stack = config.has_decoder() ? AttentionKind::Decoder : AttentionKind::Encoder;
  const int layers = last_stack_layers(config, trace);
  if (layers == 0) logit_lens_layer(config, weights, trace, 0);  // (says why)
  for (int l = 0; l < layers; ++l) lens.logits.push_back(logit_lens_layer(config, weights, trace, l));
  return lens;
}

std::string logit_lens_name(AttentionKind stack, int layer) {
  return std::string("logit_lens.") + (stack == AttentionKind::Encoder ? "enc." : "dec.") + std::to_string(layer);
}

}  // namespace sf
