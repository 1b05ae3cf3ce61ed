#include "transformer/forward.h"

#include <algorithm>
#include <numeric>

#include "transformer/layers.h"
#include "transformer/pass_memory.h"
#include "transformer/passes.h"
#include "util/error.h"

namespace sf {

namespace {

std::string kind_layer_head(AttentionKind kind, int layer, int head) { return head_ref_text({kind, layer, head}); }

std::vector<int> positions_from_zero(size_t n) {
  std::vector<int> p(n);
  std::iota(p.begin(), p.end(), 0);
  return p;
}

std::vector<int> all_rows(size_t n) { return positions_from_zero(n); }

void check_weights(const Config& config, const ModelWeights& weights) {
  if (static_cast<int>(weights.encoder_layers.size()) != config.n_encoder_layers ||
      static_cast<int>(weights.decoder_layers.size()) != config.n_decoder_layers)
    fail(ErrorKind::Shape, "forward",
         "weights hold " + std::to_string(weights.encoder_layers.size()) + "+" +
             std::to_string(weights.decoder_layers.size()) + " layers, the config says " +
             std::to_string(config.n_encoder_layers) + "+" + std::to_string(config.n_decoder_layers));
}

// The app's decoder pass over tgt_ids: every row recorded, the output layer on every row or none yet.
void traced_decoder_pass(const Config& config, const ModelWeights& weights, const std::vector<int>& tgt_ids,
                         int first_layer, OutputLayer output, Trace& trace) {
  DecoderPass pass;
  pass.rows = DecoderRows::one_sequence(tgt_ids);
  if (output == OutputLayer::AllRows) pass.output_rows = all_rows(tgt_ids.size());
  pass.record = Record::Trace;
  pass.trace = &trace;
  pass.first_layer = first_layer;
  decoder_pass(config, weights, trace, nullptr, pass);
}

}  // namespace

void check_custom_mask_sizes(const Interventions& iv, int src_length, int tgt_length) {
  for (const CustomMask& m : iv.custom_masks) {
    const HeadRef& h = m.where;
    Eigen::Index tq = src_length, tk = src_length;
    if (h.kind != AttentionKind::Encoder) {
      if (tgt_length < 0) continue;  // the decoder input is not known yet
      tq = tgt_length;
      tk = h.kind == AttentionKind::Decoder ? tgt_length : src_length;
    }
    if (m.blocked.rows() != tq || m.blocked.cols() != tk)
      fail(ErrorKind::Input, "forward",
           "custom mask for " + kind_layer_head(h.kind, h.layer, h.head) + " is " +
               shape_string({m.blocked.rows(), m.blocked.cols()}) + ", the pass needs " + shape_string({tq, tk}));
  }
}

void encode(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
            const Interventions& interventions, Trace& trace) {
  // Every check before the first change, so that a bad input leaves `trace` as it was.
  if (!config.has_encoder()) fail(ErrorKind::Input, "encode", "a decoder_only model has no encoder");
  check_weights(config, weights);
  validate_interventions(config, interventions);
  check_embedding_input(config, weights, true, src_ids, positions_from_zero(src_ids.size()));
  check_custom_mask_sizes(interventions, static_cast<int>(src_ids.size()), -1);
  trace.sequences = 1;
  trace.interventions = interventions;
  trace.src.ids = src_ids;
  encoder_pass(config, weights, 1, -1, Record::Trace, nullptr, trace);  // encoder-only: with its output head
  // The decoder half is marked not computed (has_decoder; its buffers stay, for the next pass to reuse);
  // decode_pass fills it. An encoder-only model's logits are its encoder's output head's.
  trace.tgt.ids.clear();
  if (config.has_decoder()) trace.logits.resize(0, 0);
}

bool reuse_encoder(const Config& config, const Trace& previous, const std::vector<int>& src_ids,
                   const Interventions& interventions, Trace& trace) {
  if (!config.has_cross_attention()) return false;  // only a decoder reads an encoder pass it did not run
  validate_interventions(config, interventions);
  check_custom_mask_sizes(interventions, static_cast<int>(src_ids.size()), -1);
  if (!previous.has_encoder() || previous.sequences != 1 || previous.src.ids != src_ids ||
      static_cast<int>(previous.encoder.size()) != config.n_encoder_layers ||
      plan_recompute(config, previous.interventions, interventions).encoder_from < config.n_encoder_layers)
    return false;
  trace.sequences = 1;
  trace.interventions = interventions;
  trace.src = previous.src;
  trace.encoder = previous.encoder;
  trace.encoder_norm = previous.encoder_norm;
  trace.enc_out = previous.enc_out;
  trace.tgt.ids.clear();
  trace.logits.resize(0, 0);  // the decoder half is not computed (has_decoder), as after encode()
  return true;
}

void decode_pass(const Config& config, const ModelWeights& weights, const std::vector<int>& tgt_ids, Trace& trace,
                 OutputLayer output) {
  if (!config.has_decoder()) fail(ErrorKind::Input, "decode_pass", "an encoder_only model has no decoder");
  if (config.has_cross_attention() && !trace.has_encoder())
    fail(ErrorKind::Input, "decode_pass", "the trace holds no encoder pass");
  check_embedding_input(config, weights, false, tgt_ids, positions_from_zero(tgt_ids.size()));
  check_custom_mask_sizes(trace.interventions, static_cast<int>(trace.src.ids.size()),
                          static_cast<int>(tgt_ids.size()));
  traced_decoder_pass(config, weights, tgt_ids, -1, output, trace);
}

void output_rows(const ModelWeights& weights, int begin, int end, Trace& trace) {
  if (begin < 0 || end > trace.dec_out.rows() || trace.logits.rows() != trace.dec_out.rows())
    fail(ErrorKind::Shape, "output_rows", "rows " + std::to_string(begin) + ".." + std::to_string(end) +
                                              " of a pass of " + std::to_string(trace.dec_out.rows()));
  if (end <= begin) return;
  Mat rows;
  output_logits(weights, trace.dec_out.middleRows(begin, end - begin), rows);  // (end - begin, Vt)
  trace.logits.middleRows(begin, end - begin) = rows;
}

void complete_output(const ModelWeights& weights, int done_begin, int done_end, Trace& trace) {
  const int rows = static_cast<int>(trace.dec_out.rows());
  if (done_end <= done_begin) {
    done_begin = 0;
    done_end = 0;
  }
  output_rows(weights, 0, done_begin, trace);
  output_rows(weights, done_end, rows, trace);
  masked_softmax(trace.logits, Mat(), trace.probs);
}

Trace forward(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
              const std::vector<int>& tgt_ids, const Interventions& interventions) {
  Trace trace;
  forward(config, weights, src_ids, tgt_ids, interventions, trace);
  return trace;
}

void forward(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
             const std::vector<int>& tgt_ids, const Interventions& interventions, Trace& trace) {
  if (config.stacks == ModelStacks::EncoderOnly) {  // one stack and its output head over the source
    if (!tgt_ids.empty()) fail(ErrorKind::Input, "forward", "an encoder_only model takes no decoder input");
    check_pass_memory(config, static_cast<int>(src_ids.size()),
                      [&](int s) { return traced_pass_bytes(config, s, 0); }, "forward");
    encode(config, weights, src_ids, interventions, trace);
    return;
  }
  if (config.stacks == ModelStacks::DecoderOnly) {  // one decoder pass, no source, no cross-attention
    if (!src_ids.empty()) fail(ErrorKind::Input, "forward", "a decoder_only model reads no source sentence");
    check_weights(config, weights);
    validate_interventions(config, interventions);
    check_embedding_input(config, weights, false, tgt_ids, positions_from_zero(tgt_ids.size()));
    check_custom_mask_sizes(interventions, 0, static_cast<int>(tgt_ids.size()));
    check_pass_memory(config, static_cast<int>(tgt_ids.size()),
                      [&](int t) { return traced_pass_bytes(config, 0, std::max(1, t)); }, "forward");
    trace.sequences = 1;
    trace.interventions = interventions;
    trace.src = {};
    trace.encoder.clear();
    trace.encoder_norm = {};
    trace.enc_out.resize(0, 0);
    trace.head = OutputHeadTrace{};
    traced_decoder_pass(config, weights, tgt_ids, -1, OutputLayer::AllRows, trace);
    return;
  }
  check_embedding_input(config, weights, false, tgt_ids, positions_from_zero(tgt_ids.size()));
  check_custom_mask_sizes(interventions, static_cast<int>(src_ids.size()), static_cast<int>(tgt_ids.size()));
  // Its working memory before any of it is allocated (pass_memory.h): a long sentence on a model of many heads
  // is refused with the numbers, not ended by bad_alloc.
  const int extra = static_cast<int>(tgt_ids.size()) - static_cast<int>(src_ids.size());
  check_pass_memory(config, static_cast<int>(src_ids.size()),
                    [&](int s) { return traced_pass_bytes(config, s, std::max(1, s + extra)); }, "forward");
  encode(config, weights, src_ids, interventions, trace);
  decode_pass(config, weights, tgt_ids, trace);
}

RecomputePlan plan_recompute(const Config& config, const Interventions& a, const Interventions& b) {
  RecomputePlan plan{config.n_encoder_layers, config.n_decoder_layers};
  auto touch = [&](AttentionKind kind, int layer) {
    if (kind == AttentionKind::Encoder) plan.encoder_from = std::min(plan.encoder_from, layer);
    else plan.decoder_from = std::min(plan.decoder_from, layer);
  };
  if (a.positional_encoding != b.positional_encoding) plan = {-1, -1};
  if (a.padding_mask != b.padding_mask) touch(AttentionKind::Encoder, 0), touch(AttentionKind::Decoder, 0);
  if (a.causal_mask != b.causal_mask) touch(AttentionKind::Decoder, 0);
  // Heads switched on or off: the symmetric difference of the two lists.
  for (const HeadRef& h : a.heads_off)
    if (!b.head_off(h.kind, h.layer, h.head)) touch(h.kind, h.layer);
  for (const HeadRef& h : b.heads_off)
    if (!a.head_off(h.kind, h.layer, h.head)) touch(h.kind, h.layer);
  // Custom masks added, removed or repainted.
  auto same_mask = [](const CustomMask* x, const CustomMask* y) { return x == y || (x && y && *x == *y); };
  for (const auto* list : {&a.custom_masks, &b.custom_masks})
    for (const CustomMask& m : *list) {
      const HeadRef& h = m.where;
      if (!same_mask(a.custom_mask(h.kind, h.layer, h.head), b.custom_mask(h.kind, h.layer, h.head)))
        touch(h.kind, h.layer);
    }
  if (config.has_cross_attention() && plan.encoder_from < config.n_encoder_layers)
    plan.decoder_from = std::min(plan.decoder_from, 0);
  return plan;
}

RecomputePlan recompute(const Config& config, const ModelWeights& weights, const Interventions& interventions,
                        Trace& trace) {
  if (trace.has_encoder() != config.has_encoder() || trace.has_decoder() != config.has_decoder() ||
      !trace.has_output() || trace.sequences != 1)
    fail(ErrorKind::Input, "recompute", "the trace holds no complete pass to start from");
  validate_interventions(config, interventions);
  check_custom_mask_sizes(interventions, static_cast<int>(trace.src.ids.size()),
                          static_cast<int>(trace.tgt.ids.size()));
  const RecomputePlan plan = plan_recompute(config, trace.interventions, interventions);
  trace.interventions = interventions;
  if (config.has_encoder() && plan.encoder_from < config.n_encoder_layers)
    encoder_pass(config, weights, 1, plan.encoder_from, Record::Trace, nullptr, trace);
  if (config.has_decoder() && plan.decoder_from < config.n_decoder_layers)
    traced_decoder_pass(config, weights, trace.tgt.ids, plan.decoder_from, OutputLayer::AllRows, trace);
  return plan;
}

}  // namespace sf
