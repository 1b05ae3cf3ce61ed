// Family "seq2seq-tutorial": the "Attention is All You Need" notebook of the popular PyTorch seq2seq tutorials
// (fc_q/fc_k/fc_v/fc_o attention, learned positions, post-norm, no final norms, masks via masked_fill(-1e10)).
#include "model/family.h"

namespace sf {

namespace {

std::optional<FamilyTensorName> tensor_name(const WeightPlace& r, const Config&) {
  const std::string suffix = param_suffix(r.param);
  switch (r.block) {
    case WeightBlock::SrcEmbedding: return FamilyTensorName{"encoder.tok_embedding.weight"};
    case WeightBlock::SrcPositions: return FamilyTensorName{"encoder.pos_embedding.weight"};
    case WeightBlock::TgtEmbedding: return FamilyTensorName{"decoder.tok_embedding.weight"};
    case WeightBlock::TgtPositions: return FamilyTensorName{"decoder.pos_embedding.weight"};
    case WeightBlock::EncoderNorm:
    case WeightBlock::DecoderNorm: return std::nullopt;  // no final norms (the needs below)
    case WeightBlock::Generator: return FamilyTensorName{"decoder.fc_out" + suffix};
    case WeightBlock::SrcTokenTypes:
    case WeightBlock::EmbeddingNorm:
    case WeightBlock::HeadTransform:
    case WeightBlock::HeadNorm: return std::nullopt;  // BERT's parts: not in this family's shape
    case WeightBlock::EncoderLayer:
    case WeightBlock::DecoderLayer: break;
  }
  const std::string p =
      std::string(r.block == WeightBlock::EncoderLayer ? "encoder" : "decoder") + ".layers." + std::to_string(r.layer) + ".";
  const char* projection = r.projection == Projection::Q   ? "fc_q"
                           : r.projection == Projection::K ? "fc_k"
                           : r.projection == Projection::V ? "fc_v"
                                                           : "fc_o";
  switch (r.part) {
    case LayerPart::SelfAttn: return FamilyTensorName{p + "self_attention." + projection + suffix};
    case LayerPart::CrossAttn: return FamilyTensorName{p + "encoder_attention." + projection + suffix};
    case LayerPart::SelfAttnNorm: return FamilyTensorName{p + "self_attn_layer_norm" + suffix};
    case LayerPart::CrossAttnNorm: return FamilyTensorName{p + "enc_attn_layer_norm" + suffix};
    case LayerPart::Fc1: return FamilyTensorName{p + "positionwise_feedforward.fc_1" + suffix};
    case LayerPart::Fc2: return FamilyTensorName{p + "positionwise_feedforward.fc_2" + suffix};
    case LayerPart::FfnNorm: return FamilyTensorName{p + "ff_layer_norm" + suffix};
    case LayerPart::None: break;
  }
  return std::nullopt;
}

}  // namespace

const FamilyDescription& seq2seq_tutorial_family() {
  static const FamilyDescription family{
      "seq2seq-tutorial",
      "the \"Attention is All You Need\" notebook of the PyTorch seq2seq tutorials",
      ModelStacks::EncoderDecoder,
      "words",
      {{[](const Config& c) { return c.positional_encoding == PositionalEncoding::Learned; },
        "positional_encoding \"learned\" (pos_embedding)"},
       {[](const Config& c) { return !c.encoder_final_norm && !c.decoder_final_norm; },
        "encoder_final_norm and decoder_final_norm false"},
       {[](const Config& c) { return c.bias; }, "bias true (the tutorial's linear layers carry biases)"},
       {[](const Config& c) { return !c.share_embeddings && !c.tie_output_embedding; },
        "share_embeddings and tie_output_embedding false (the tutorial has separate embeddings and fc_out)"}},
      tensor_name};
  return family;
}

}  // namespace sf
