// Family "bert": Hugging Face's BertForMaskedLM (modeling_bert.py; the hub's bert-base-uncased,
// bert-base-cased, ... and every model trained with that code; model/hf_bert.h reads its folder), as its
// model.safetensors names the weights:
//   bert.embeddings.word_embeddings.weight (V, C)        the token embedding, also the output (tied)
//   bert.embeddings.position_embeddings.weight (P, C)    learned positions
//   bert.embeddings.token_type_embeddings.weight (Ty, C) token types (segments); Stepformer adds row 0 to every token
//   bert.embeddings.LayerNorm.{weight,bias}              the norm over their sum (embedding_norm)
//   bert.encoder.layer.L.attention.self.{query,key,value}.{weight,bias}   W_q, W_k, W_v (C, C)
//   bert.encoder.layer.L.attention.output.dense.{weight,bias}             W_o (C, C)
//   bert.encoder.layer.L.attention.output.LayerNorm.{weight,bias}         post-norm after attention
//   bert.encoder.layer.L.intermediate.dense.{weight,bias}                 W_1 (F, C)
//   bert.encoder.layer.L.output.dense.{weight,bias}                       W_2 (C, F)
//   bert.encoder.layer.L.output.LayerNorm.{weight,bias}                   post-norm after the feed-forward
//   cls.predictions.transform.dense.{weight,bias}        the masked-LM head's dense layer (C, C)
//   cls.predictions.transform.LayerNorm.{weight,bias}    its norm
//   cls.predictions.bias (V)                             the output's bias; cls.predictions.decoder.weight is tied
//                                                        to the word embedding (absent, or a copy the reader checks)
// All nn.Linear ([out, in]), nothing stacked or transposed. BertModel's files lack the "bert." prefix (and the
// head), BertForPreTraining's add bert.pooler.* and cls.seq_relationship.*: the folder reader (model/hf_bert.cpp)
// aliases and skips those.
#include "model/family.h"

namespace sf {

namespace {

std::optional<FamilyTensorName> tensor_name(const WeightPlace& r, const Config&) {
  const std::string suffix = param_suffix(r.param);
  switch (r.block) {
    case WeightBlock::SrcEmbedding: return FamilyTensorName{"bert.embeddings.word_embeddings.weight"};
    case WeightBlock::SrcPositions: return FamilyTensorName{"bert.embeddings.position_embeddings.weight"};
    case WeightBlock::SrcTokenTypes: return FamilyTensorName{"bert.embeddings.token_type_embeddings.weight"};
    case WeightBlock::EmbeddingNorm: return FamilyTensorName{"bert.embeddings.LayerNorm" + suffix};
    case WeightBlock::HeadTransform: return FamilyTensorName{"cls.predictions.transform.dense" + suffix};
    case WeightBlock::HeadNorm: return FamilyTensorName{"cls.predictions.transform.LayerNorm" + suffix};
    case WeightBlock::Generator:
      if (r.param == WeightParam::Bias) return FamilyTensorName{"cls.predictions.bias"};
      return std::nullopt;  // tied to the word embedding (cls.predictions.decoder.weight, when saved, is a copy)
    case WeightBlock::EncoderLayer: break;
    default: return std::nullopt;  // no decoder, no final norm: the config's shape has none of these
  }
  const std::string p = "bert.encoder.layer." + std::to_string(r.layer) + ".";
  const char* projection = r.projection == Projection::Q   ? "query"
                           : r.projection == Projection::K ? "key"
                           : r.projection == Projection::V ? "value"
                                                           : "";
  switch (r.part) {
    case LayerPart::SelfAttn:
      if (r.projection == Projection::Out) return FamilyTensorName{p + "attention.output.dense" + suffix};
      return FamilyTensorName{p + "attention.self." + projection + suffix};
    case LayerPart::SelfAttnNorm: return FamilyTensorName{p + "attention.output.LayerNorm" + suffix};
    case LayerPart::Fc1: return FamilyTensorName{p + "intermediate.dense" + suffix};
    case LayerPart::Fc2: return FamilyTensorName{p + "output.dense" + suffix};
    case LayerPart::FfnNorm: return FamilyTensorName{p + "output.LayerNorm" + suffix};
    default: return std::nullopt;  // no cross-attention in an encoder
  }
}

}  // namespace

const FamilyDescription& bert_family() {
  static const FamilyDescription family{
      "bert",
      "Hugging Face's BertForMaskedLM (bert-base-uncased, bert-base-cased)",
      ModelStacks::EncoderOnly,
      "wordpiece",
      {{[](const Config& c) { return c.positional_encoding == PositionalEncoding::Learned; },
        "positional_encoding \"learned\" (position_embeddings)"},
       {[](const Config& c) { return c.type_vocab_size > 0 && c.embedding_norm; },
        "type_vocab_size > 0 and embedding_norm true (token_type_embeddings, embeddings.LayerNorm)"},
       {[](const Config& c) { return c.embedding_scale == EmbeddingScale::One; }, "embedding_scale \"one\""},
       {[](const Config& c) { return c.norm_placement == NormPlacement::Post && !c.encoder_final_norm; },
        "norm_placement \"post\" and encoder_final_norm false (BertLayer)"},
       {[](const Config& c) { return c.attention == AttentionStyle::SplitHeads; }, "attention \"split_heads\""},
       {[](const Config& c) {
          return c.output_head == OutputHead::MaskedLM && c.bias && c.output_bias && c.tie_output_embedding;
        },
        "output_head \"masked_lm\", bias and output_bias true and tie_output_embedding true (cls.predictions: "
        "the decoder tied to the word embedding, its own bias)"}},
      tensor_name};
  return family;
}

}  // namespace sf
