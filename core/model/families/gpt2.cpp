// Family "gpt2": Hugging Face's GPT2LMHeadModel (modeling_gpt2.py; the hub's gpt2, distilgpt2, and every model
// trained with that code; model/hf_gpt2.h reads its folder), as its model.safetensors names the weights:
//   transformer.wte.weight (V, C)            the token embedding, also the output (lm_head is tied, not stored)
//   transformer.wpe.weight (P, C)            learned positions
//   transformer.h.L.ln_1.{weight,bias}       the norm before attention (pre-norm)
//   transformer.h.L.attn.c_attn.{weight,bias}  Q, K and V in one Conv1D: weight (C, 3C) = [W_q; W_k; W_v]^T
//   transformer.h.L.attn.c_proj.{weight,bias}  W_o as a Conv1D: weight (C, C) = W_o^T
//   transformer.h.L.ln_2.{weight,bias}       the norm before the MLP
//   transformer.h.L.mlp.c_fc.{weight,bias}   (C, F) = W_1^T
//   transformer.h.L.mlp.c_proj.{weight,bias} (F, C) = W_2^T
//   transformer.ln_f.{weight,bias}           the final norm
// A Conv1D computes y = x W + b with W stored [in, out], the transpose of nn.Linear's [out, in]: those tensors are
// `transposed` (model/name_tables.h). Checkpoints saved from GPT2Model lack the "transformer." prefix: the folder
// reader aliases them (model/hf_gpt2.cpp).
#include "model/family.h"

namespace sf {

namespace {

std::optional<FamilyTensorName> tensor_name(const WeightPlace& r, const Config&) {
  const std::string suffix = param_suffix(r.param);
  const bool matrix = r.param == WeightParam::Weight;
  switch (r.block) {
    case WeightBlock::TgtEmbedding: return FamilyTensorName{"transformer.wte.weight"};
    case WeightBlock::TgtPositions: return FamilyTensorName{"transformer.wpe.weight"};
    case WeightBlock::DecoderNorm: return FamilyTensorName{"transformer.ln_f" + suffix};
    case WeightBlock::Generator: return std::nullopt;  // tied to wte (lm_head.weight, when saved, is a copy)
    case WeightBlock::DecoderLayer: break;
    default: return std::nullopt;  // no encoder: the config's shape has none of these
  }
  const std::string p = "transformer.h." + std::to_string(r.layer) + ".";
  switch (r.part) {
    case LayerPart::SelfAttn:
      if (r.projection == Projection::Out) return FamilyTensorName{p + "attn.c_proj" + suffix, 0, 1, false, matrix};
      return FamilyTensorName{p + "attn.c_attn" + suffix,
                              r.projection == Projection::Q ? 0 : r.projection == Projection::K ? 1 : 2, 3, false,
                              matrix};
    case LayerPart::SelfAttnNorm: return FamilyTensorName{p + "ln_1" + suffix};
    case LayerPart::FfnNorm: return FamilyTensorName{p + "ln_2" + suffix};
    case LayerPart::Fc1: return FamilyTensorName{p + "mlp.c_fc" + suffix, 0, 1, false, matrix};
    case LayerPart::Fc2: return FamilyTensorName{p + "mlp.c_proj" + suffix, 0, 1, false, matrix};
    default: return std::nullopt;
  }
}

}  // namespace

const FamilyDescription& gpt2_family() {
  static const FamilyDescription family{
      "gpt2",
      "Hugging Face's GPT2LMHeadModel (gpt2, distilgpt2)",
      ModelStacks::DecoderOnly,
      "byte_bpe",
      {{[](const Config& c) { return c.positional_encoding == PositionalEncoding::Learned; },
        "positional_encoding \"learned\" (wpe)"},
       {[](const Config& c) { return c.norm_placement == NormPlacement::Pre && c.decoder_final_norm; },
        "norm_placement \"pre\" and decoder_final_norm true (ln_1, ln_2, ln_f)"},
       {[](const Config& c) { return c.embedding_scale == EmbeddingScale::One; }, "embedding_scale \"one\""},
       {[](const Config& c) { return c.attention == AttentionStyle::SplitHeads; }, "attention \"split_heads\""},
       {[](const Config& c) { return c.bias && !c.output_bias && c.tie_output_embedding; },
        "bias true, output_bias false and tie_output_embedding true (lm_head is wte, without a bias)"},
       {[](const Config& c) { return !c.starts_with_bos; }, "starts_with_bos false (the prompt as it is)"}},
      tensor_name};
  return family;
}

}  // namespace sf
