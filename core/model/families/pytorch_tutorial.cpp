// Family "pytorch-tutorial": the Seq2SeqTransformer of PyTorch's "Language Translation with nn.Transformer"
// tutorial: `transformer` a torch.nn.Transformer (post-norm or norm_first), token embeddings scaled by sqrt(C),
// the tutorial's sinusoidal positions (computed, not stored), a `generator` Linear.
#include "model/family.h"

namespace sf {

namespace {

std::optional<FamilyTensorName> tensor_name(const WeightPlace& r, const Config&) {
  const std::string suffix = param_suffix(r.param);
  switch (r.block) {
    case WeightBlock::SrcEmbedding: return FamilyTensorName{"src_tok_emb.embedding.weight"};
    case WeightBlock::TgtEmbedding: return FamilyTensorName{"tgt_tok_emb.embedding.weight"};
    case WeightBlock::SrcPositions:
    case WeightBlock::TgtPositions: return std::nullopt;  // sinusoidal only (the needs below)
    case WeightBlock::EncoderNorm: return FamilyTensorName{"transformer.encoder.norm" + suffix};
    case WeightBlock::DecoderNorm: return FamilyTensorName{"transformer.decoder.norm" + suffix};
    case WeightBlock::Generator: return FamilyTensorName{"generator" + suffix};
    case WeightBlock::SrcTokenTypes:
    case WeightBlock::EmbeddingNorm:
    case WeightBlock::HeadTransform:
    case WeightBlock::HeadNorm: return std::nullopt;  // BERT's parts: not in this family's shape
    case WeightBlock::EncoderLayer:
    case WeightBlock::DecoderLayer: break;
  }
  const bool encoder = r.block == WeightBlock::EncoderLayer;
  const std::string p = std::string(encoder ? "transformer.encoder" : "transformer.decoder") + ".layers." +
                        std::to_string(r.layer) + ".";
  // nn.TransformerEncoderLayer: norm1 follows self-attention, norm2 the feed-forward; the decoder layer's norm1
  // self-attention, norm2 cross-attention (multihead_attn), norm3 the feed-forward.
  switch (r.part) {
    case LayerPart::SelfAttn:
    case LayerPart::CrossAttn: {
      const std::string a = p + (r.part == LayerPart::SelfAttn ? "self_attn" : "multihead_attn");
      if (r.projection == Projection::Out) return FamilyTensorName{a + ".out_proj" + suffix};
      const int index = r.projection == Projection::Q ? 0 : r.projection == Projection::K ? 1 : 2;
      return FamilyTensorName{a + (r.param == WeightParam::Weight ? ".in_proj_weight" : ".in_proj_bias"), index, 3};
    }
    case LayerPart::SelfAttnNorm: return FamilyTensorName{p + "norm1" + suffix};
    case LayerPart::CrossAttnNorm: return FamilyTensorName{p + "norm2" + suffix};
    case LayerPart::FfnNorm: return FamilyTensorName{p + (encoder ? "norm2" : "norm3") + suffix};
    case LayerPart::Fc1: return FamilyTensorName{p + "linear1" + suffix};
    case LayerPart::Fc2: return FamilyTensorName{p + "linear2" + suffix};
    case LayerPart::None: break;
  }
  return std::nullopt;
}

}  // namespace

const FamilyDescription& pytorch_tutorial_family() {
  static const FamilyDescription family{
      "pytorch-tutorial",
      "PyTorch's \"Language Translation with nn.Transformer\" tutorial (Seq2SeqTransformer)",
      ModelStacks::EncoderDecoder,
      "words",
      {{[](const Config& c) { return c.positional_encoding == PositionalEncoding::Sinusoidal; },
        "positional_encoding \"sinusoidal\""},
       {[](const Config& c) { return c.encoder_final_norm && c.decoder_final_norm; },
        "encoder_final_norm and decoder_final_norm true (nn.Transformer has both final norms)"},
       {[](const Config& c) { return c.bias; }, "bias true (nn.Transformer's linear layers carry biases)"},
       {[](const Config& c) { return !c.share_embeddings && !c.tie_output_embedding; },
        "share_embeddings and tie_output_embedding false (the tutorial has separate embeddings and generator)"}},
      tensor_name};
  return family;
}

}  // namespace sf
