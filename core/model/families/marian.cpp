// Family "marian": Hugging Face's MarianMTModel (modeling_marian.py; opus-mt, model/hf_marian.h reads its folder),
// as its model.safetensors names the weights: one shared embedding (model.shared) or one per side, the output tied
// to the target embedding (lm_head is not stored), the output's bias final_logits_bias (1, V), sinusoidal positions
// computed with sines and cosines in halves (MarianSinusoidalPositionalEmbedding), SentencePiece tokenizers.
#include "model/family.h"

namespace sf {

namespace {

std::optional<FamilyTensorName> tensor_name(const WeightPlace& r, const Config& config) {
  const std::string suffix = param_suffix(r.param);
  switch (r.block) {
    case WeightBlock::SrcEmbedding:
      return FamilyTensorName{config.share_embeddings ? "model.shared.weight" : "model.encoder.embed_tokens.weight"};
    case WeightBlock::TgtEmbedding:
      if (!r.stored) return std::nullopt;  // the shared embedding
      return FamilyTensorName{"model.decoder.embed_tokens.weight"};
    case WeightBlock::SrcPositions:
    case WeightBlock::TgtPositions:
    case WeightBlock::EncoderNorm:
    case WeightBlock::DecoderNorm: return std::nullopt;
    case WeightBlock::Generator:
      if (r.param == WeightParam::Bias) return FamilyTensorName{"final_logits_bias", 0, 1, true};
      if (!r.stored) return std::nullopt;  // tied to the target embedding
      return FamilyTensorName{"lm_head.weight"};
    case WeightBlock::SrcTokenTypes:
    case WeightBlock::EmbeddingNorm:
    case WeightBlock::HeadTransform:
    case WeightBlock::HeadNorm: return std::nullopt;  // BERT's parts: not in this family's shape
    case WeightBlock::EncoderLayer:
    case WeightBlock::DecoderLayer: break;
  }
  const std::string p = std::string(r.block == WeightBlock::EncoderLayer ? "model.encoder" : "model.decoder") +
                        ".layers." + std::to_string(r.layer) + ".";
  const char* projection = r.projection == Projection::Q   ? "q_proj"
                           : r.projection == Projection::K ? "k_proj"
                           : r.projection == Projection::V ? "v_proj"
                                                           : "out_proj";
  switch (r.part) {
    case LayerPart::SelfAttn: return FamilyTensorName{p + "self_attn." + projection + suffix};
    case LayerPart::SelfAttnNorm: return FamilyTensorName{p + "self_attn_layer_norm" + suffix};
    case LayerPart::CrossAttn: return FamilyTensorName{p + "encoder_attn." + projection + suffix};
    case LayerPart::CrossAttnNorm: return FamilyTensorName{p + "encoder_attn_layer_norm" + suffix};
    case LayerPart::Fc1: return FamilyTensorName{p + "fc1" + suffix};
    case LayerPart::Fc2: return FamilyTensorName{p + "fc2" + suffix};
    case LayerPart::FfnNorm: return FamilyTensorName{p + "final_layer_norm" + suffix};
    case LayerPart::None: break;
  }
  return std::nullopt;
}

}  // namespace

const FamilyDescription& marian_family() {
  static const FamilyDescription family{
      "marian",
      "Hugging Face's MarianMTModel (opus-mt)",
      ModelStacks::EncoderDecoder,
      "sentencepiece",
      {{[](const Config& c) {
          return c.positional_encoding == PositionalEncoding::Sinusoidal && c.sinusoid_layout == SinusoidLayout::Halves;
        },
        "positional_encoding \"sinusoidal\" with sinusoid_layout \"halves\" (MarianSinusoidalPositionalEmbedding)"},
       {[](const Config& c) {
          return c.norm_placement == NormPlacement::Post && !c.encoder_final_norm && !c.decoder_final_norm;
        },
        "norm_placement \"post\" and no final norms (MarianEncoderLayer, MarianDecoderLayer)"},
       {[](const Config& c) { return c.attention == AttentionStyle::SplitHeads; }, "attention \"split_heads\""},
       {[](const Config& c) { return c.bias; },
        "bias true (Marian's linear layers carry biases; final_logits_bias is the output's)"}},
      tensor_name};
  return family;
}

}  // namespace sf
