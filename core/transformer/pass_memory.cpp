#include "transformer/pass_memory.h"

#include <cstdio>
#include <string>

#include "util/error.h"
#include "util/memory.h"

namespace sf {

namespace {

// Floats of one attention block with Tq queries and Tk keys, and of the rest of a layer.
double attention_floats(const Config& c, double tq, double tk) {
  return 2.0 * c.n_heads * tq * tk + 9.0 * (tq > tk ? tq : tk) * c.d_model;
}

double encoder_floats(const Config& c, double s) {
  return c.n_encoder_layers * (attention_floats(c, s, s) + 6.0 * s * c.d_model + 2.0 * s * c.d_ff) + 4.0 * s * c.d_model +
         (c.has_decoder() ? 0.0 : 2.0 * s * c.src_vocab_size);  // an encoder-only model's output head
}

double decoder_floats(const Config& c, double s, double t) {
  const double cross = c.has_cross_attention() ? attention_floats(c, t, s) : 0.0;
  return c.n_decoder_layers * (attention_floats(c, t, t) + cross + 9.0 * t * c.d_model + 2.0 * t * c.d_ff) +
         4.0 * t * c.d_model + 2.0 * t * c.tgt_vocab_size;
}

}  // namespace

double traced_pass_bytes(const Config& config, int source_tokens, int target_tokens) {
  return 4.0 * (encoder_floats(config, source_tokens) + decoder_floats(config, source_tokens, target_tokens));
}

double decoding_bytes(const Config& config, int source_tokens, int max_tokens, int hypotheses) {
  const double t = max_tokens, per_hypothesis = config.n_decoder_layers * 2.0 * t * config.d_model +
                                                t * config.tgt_vocab_size;
  return traced_pass_bytes(config, source_tokens, max_tokens) + 4.0 * hypotheses * per_hypothesis;
}

double pass_memory_available() { return available_memory_bytes(); }

void check_pass_memory_bytes(const Config& config, int source_tokens, double bytes, int fitting_tokens,
                             double available, const char* where) {
  char text[400];
  std::snprintf(text, sizeof text,
                "a pass over %d source tokens needs about %.1f GB of memory with this model (%d heads, %d+%d layers: "
                "the attention maps grow with the square of the length); %.1f GB is free: ",
                source_tokens, bytes / 1e9, config.n_heads, config.n_encoder_layers, config.n_decoder_layers,
                available / 1e9);
  std::string message = text;
  message += fitting_tokens > 0 ? "at most " + std::to_string(fitting_tokens) + " tokens fit"
                                : std::string("not even one token fits");
  fail(ErrorKind::Input, where, message);
}

}  // namespace sf
