#include "explain/logit_lens.h"

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
  // What follows the last layer in the pass (transformer/passes.cpp), in the same functions, so the last layer's
  // lens is the pass's own logits: the final norm (or nothing), then the output head.
  const bool decoder = config.has_decoder();
  LayerNormTrace norm;
  Mat normed;  // (N, C)
  final_norm_forward(config, decoder ? config.decoder_final_norm : config.encoder_final_norm,
                     decoder ? weights.decoder_norm : weights.encoder_norm, layer_output(config, trace, layer), norm,
                     normed);
  OutputHeadTrace head;
  Mat logits;  // (N, V)
  output_head_forward(config, weights, normed, head, logits);
  return logits;
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
