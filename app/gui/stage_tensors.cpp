#include "gui/stage_tensors.h"

#include "gui/text/text.h"

namespace sf::gui {

namespace {

bool post(const Config& c) { return c.norm_placement == NormPlacement::Post; }

const Mat& encoder_layer_input(const Trace& t, int layer) {
  return layer == 0 ? t.src.sum : t.encoder[static_cast<size_t>(layer - 1)].out;
}
const Mat& decoder_layer_input(const Trace& t, int layer) {
  return layer == 0 ? t.tgt.sum : t.decoder[static_cast<size_t>(layer - 1)].out;
}

}  // namespace

AttentionInputs attention_inputs(const Config& config, const Trace& trace, AttentionKind kind, int layer) {
  AttentionInputs in;
  if (layer < 0) return in;
  if (kind == AttentionKind::Encoder) {
    if (layer >= static_cast<int>(trace.encoder.size())) return in;
    in.queries_from = post(config) ? &encoder_layer_input(trace, layer) : &trace.encoder[static_cast<size_t>(layer)].norm1.out;
    in.keys_from = in.queries_from;
  } else {
    if (layer >= static_cast<int>(trace.decoder.size())) return in;
    const DecoderLayerTrace& d = trace.decoder[static_cast<size_t>(layer)];
    if (kind == AttentionKind::Decoder) {
      in.queries_from = post(config) ? &decoder_layer_input(trace, layer) : &d.norm1.out;
      in.keys_from = in.queries_from;
    } else {
      in.queries_from = post(config) ? &d.norm1.out : &d.norm2.out;
      in.keys_from = &trace.enc_out;
    }
  }
  return in;
}

const AttentionWeights& attention_weights(const ModelWeights& weights, AttentionKind kind, int layer) {
  if (kind == AttentionKind::Encoder) return weights.encoder_layers[static_cast<size_t>(layer)].self_attn;
  const DecoderLayerWeights& d = weights.decoder_layers[static_cast<size_t>(layer)];
  return kind == AttentionKind::Decoder ? d.self_attn : d.cross_attn;
}

std::vector<ResidualBlock> residual_blocks(const Config& config, const Trace& trace, bool encoder, int layer) {
  // A layer's sublayers in order, each with its output, the residual sum and its norm. Post-norm: each block
  // reads the norm before it ("after ..."); pre-norm: the residual stream, the sum before it ("around ...").
  struct Sublayer {
    T after;  // the block's name from the string table
    T around;
    const Mat* out;
    const Mat* sum;
    const LayerNormTrace* norm;
  };
  std::vector<Sublayer> sublayers;
  const Mat* x = nullptr;  // the layer's input
  if (layer < 0) return {};
  if (encoder) {
    if (layer >= static_cast<int>(trace.encoder.size())) return {};
    const EncoderLayerTrace& t = trace.encoder[static_cast<size_t>(layer)];
    x = &encoder_layer_input(trace, layer);
    sublayers = {
        {T::add_norm_block_after_self, T::add_norm_block_around_self, &t.self_attn.attn_out, &t.residual1, &t.norm1},
        {T::add_norm_block_after_ffn, T::add_norm_block_around_ffn, &t.ffn.out, &t.residual2, &t.norm2}};
  } else {
    if (layer >= static_cast<int>(trace.decoder.size())) return {};
    const DecoderLayerTrace& t = trace.decoder[static_cast<size_t>(layer)];
    x = &decoder_layer_input(trace, layer);
    sublayers = {
        {T::add_norm_block_after_masked, T::add_norm_block_around_masked, &t.self_attn.attn_out, &t.residual1,
         &t.norm1},
        {T::add_norm_block_after_cross, T::add_norm_block_around_cross, &t.cross_attn.attn_out, &t.residual2, &t.norm2},
        {T::add_norm_block_after_ffn, T::add_norm_block_around_ffn, &t.ffn.out, &t.residual3, &t.norm3}};
    // No encoder (decoder-only): no cross-attention block; the feed-forward block is still block 3 (residual3,
    // norm3: transformer/layer_order.h), reading what block 1 gave.
    if (!config.has_cross_attention()) sublayers.erase(sublayers.begin() + 1);
  }
  std::vector<ResidualBlock> blocks;
  for (const Sublayer& s : sublayers) {
    blocks.push_back({tr(post(config) ? s.after : s.around), x, s.out, s.sum, s.norm});
    x = post(config) ? &s.norm->out : s.sum;  // the next block's input
  }
  return blocks;
}

const Mat* feed_forward_input(const Config& config, const Trace& trace, bool encoder, int layer) {
  if (layer < 0) return nullptr;
  if (encoder) {
    if (layer >= static_cast<int>(trace.encoder.size())) return nullptr;
    const EncoderLayerTrace& t = trace.encoder[static_cast<size_t>(layer)];
    return post(config) ? &t.norm1.out : &t.norm2.out;
  }
  if (layer >= static_cast<int>(trace.decoder.size())) return nullptr;
  const DecoderLayerTrace& t = trace.decoder[static_cast<size_t>(layer)];
  if (!config.has_cross_attention()) return post(config) ? &t.norm1.out : &t.norm3.out;  // no block 2
  return post(config) ? &t.norm2.out : &t.norm3.out;
}

std::vector<std::string> reshaped_head_labels(const std::vector<std::string>& tokens, int head, int n_heads) {
  const int t = static_cast<int>(tokens.size());
  std::vector<std::string> out(tokens.size());
  for (int i = 0; i < t; ++i) {
    const int piece = head * t + i;
    out[static_cast<size_t>(i)] = tokens[static_cast<size_t>(piece / n_heads)] + " [" + std::to_string(piece % n_heads) + "]";
  }
  return out;
}

}  // namespace sf::gui
