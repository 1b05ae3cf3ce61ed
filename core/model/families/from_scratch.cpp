// Family "from-scratch": the study notes' "Transformer from scratch" (../shared/seeds/001_*.txt), its state_dict:
// Encoder/Decoder modules, selfAttention's query/key/value/fc_out (its heads reshaped without a transpose:
// config.attention reshape_heads, config.h), the decoder block's own norm then an EncoderBlock (encoder_block) over
// the encoder output, positions computed in the module.
#include "model/family.h"

namespace sf {

namespace {

std::optional<FamilyTensorName> tensor_name(const WeightPlace& r, const Config&) {
  const std::string suffix = param_suffix(r.param);
  switch (r.block) {
    case WeightBlock::SrcEmbedding: return FamilyTensorName{"Encoder.word_embedding.weight"};
    case WeightBlock::TgtEmbedding: return FamilyTensorName{"Decoder.word_embedding.weight"};
    case WeightBlock::SrcPositions:
    case WeightBlock::TgtPositions:
    case WeightBlock::EncoderNorm:
    case WeightBlock::DecoderNorm: return std::nullopt;  // computed table, no final norms (the needs below)
    case WeightBlock::Generator: return FamilyTensorName{"fc_out" + suffix};
    case WeightBlock::SrcTokenTypes:
    case WeightBlock::EmbeddingNorm:
    case WeightBlock::HeadTransform:
    case WeightBlock::HeadNorm: return std::nullopt;  // BERT's parts: not in this family's shape
    case WeightBlock::EncoderLayer:
    case WeightBlock::DecoderLayer: break;
  }
  const bool encoder = r.block == WeightBlock::EncoderLayer;
  const std::string p = std::string(encoder ? "Encoder" : "Decoder") + ".layers." + std::to_string(r.layer) + ".";
  // The decoder's cross-attention, its norm and its feed-forward live in the EncoderBlock it wraps.
  const std::string block = encoder ? p : p + "encoder_block.";
  const char* projection = r.projection == Projection::Q   ? "query"
                           : r.projection == Projection::K ? "key"
                           : r.projection == Projection::V ? "value"
                                                           : "fc_out";
  switch (r.part) {
    case LayerPart::SelfAttn: return FamilyTensorName{p + "attention." + projection + suffix};
    case LayerPart::SelfAttnNorm: return FamilyTensorName{p + (encoder ? "norm1" : "norm") + suffix};
    case LayerPart::CrossAttn: return FamilyTensorName{block + "attention." + projection + suffix};
    case LayerPart::CrossAttnNorm: return FamilyTensorName{block + "norm1" + suffix};
    case LayerPart::Fc1: return FamilyTensorName{block + "feed_forawrd.0" + suffix};  // the note's spelling
    case LayerPart::Fc2: return FamilyTensorName{block + "feed_forawrd.2" + suffix};
    case LayerPart::FfnNorm: return FamilyTensorName{block + "norm2" + suffix};
    case LayerPart::None: break;
  }
  return std::nullopt;
}

}  // namespace

const FamilyDescription& from_scratch_family() {
  static const FamilyDescription family{
      "from-scratch",
      "the study notes' \"Transformer from scratch\"",
      ModelStacks::EncoderDecoder,
      "words",
      {{[](const Config& c) { return c.attention == AttentionStyle::ReshapeHeads; },
        "attention \"reshape_heads\" (the note's selfAttention)"},
       {[](const Config& c) { return c.positional_encoding == PositionalEncoding::Sinusoidal; },
        "positional_encoding \"sinusoidal\" (the note computes its table in the module)"},
       {[](const Config& c) { return c.embedding_scale == EmbeddingScale::One; },
        "embedding_scale \"one\" (the note adds positions to raw embeddings)"},
       {[](const Config& c) { return c.norm_placement == NormPlacement::Post && c.activation == Activation::ReLU; },
        "norm_placement \"post\" and activation \"relu\" (the note's blocks)"},
       {[](const Config& c) { return !c.encoder_final_norm && !c.decoder_final_norm; },
        "encoder_final_norm and decoder_final_norm false"},
       {[](const Config& c) { return c.bias; }, "bias true (fc_out and the feed-forward layers carry biases)"},
       {[](const Config& c) { return !c.share_embeddings && !c.tie_output_embedding; },
        "share_embeddings and tie_output_embedding false (the note has separate embeddings and fc_out)"}},
      tensor_name};
  return family;
}

}  // namespace sf
