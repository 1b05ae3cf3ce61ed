#include "model/name_tables.h"

#include <map>
#include <optional>
#include <type_traits>

#include "util/error.h"

namespace sf {

const std::vector<std::string>& known_families() {
  static const std::vector<std::string> families = {kFamilyStepformer, kFamilyPytorchTutorial, kFamilySeq2SeqTutorial,
                                                      kFamilyFromScratch, kFamilyMarian};
  return families;
}

std::string known_families_text() {
  const auto& f = known_families();
  std::string text;
  for (size_t i = 0; i < f.size(); ++i) text += (i == 0 ? "" : i + 1 == f.size() ? " or " : ", ") + f[i];
  return text;
}

bool is_known_family(const std::string& family) {
  for (const auto& f : known_families())
    if (f == family) return true;
  return false;
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void check_family_config(const std::string& family, const Config& c, const std::string& where) {
  if (!is_known_family(family))
    fail(ErrorKind::Format, where, "unknown family '" + family + "' (expected " + known_families_text() + ")");
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) fail(ErrorKind::Config, where, "family '" + family + "' needs " + what);
  };
  if (family != kFamilyStepformer)  // the checkpoints of these families are translation models
    need(c.stacks == ModelStacks::EncoderDecoder, "stacks \"encoder_decoder\" (its checkpoints have both stacks)");
  if (family == kFamilyPytorchTutorial) {
    need(c.positional_encoding == PositionalEncoding::Sinusoidal, "positional_encoding \"sinusoidal\"");
    need(c.encoder_final_norm && c.decoder_final_norm,
         "encoder_final_norm and decoder_final_norm true (nn.Transformer has both final norms)");
    need(c.bias, "bias true (nn.Transformer's linear layers carry biases)");
    need(!c.share_embeddings && !c.tie_output_embedding,
         "share_embeddings and tie_output_embedding false (the tutorial has separate embeddings and generator)");
  } else if (family == kFamilyFromScratch) {
    need(c.attention == AttentionStyle::ReshapeHeads, "attention \"reshape_heads\" (the note's selfAttention)");
    need(c.positional_encoding == PositionalEncoding::Sinusoidal,
         "positional_encoding \"sinusoidal\" (the note computes its table in the module)");
    need(c.embedding_scale == EmbeddingScale::One, "embedding_scale \"one\" (the note adds positions to raw embeddings)");
    need(c.norm_placement == NormPlacement::Post && c.activation == Activation::ReLU,
         "norm_placement \"post\" and activation \"relu\" (the note's blocks)");
    need(!c.encoder_final_norm && !c.decoder_final_norm, "encoder_final_norm and decoder_final_norm false");
    need(c.bias, "bias true (fc_out and the feed-forward layers carry biases)");
    need(!c.share_embeddings && !c.tie_output_embedding,
         "share_embeddings and tie_output_embedding false (the note has separate embeddings and fc_out)");
  } else if (family == kFamilyMarian) {
    need(c.positional_encoding == PositionalEncoding::Sinusoidal && c.sinusoid_layout == SinusoidLayout::Halves,
         "positional_encoding \"sinusoidal\" with sinusoid_layout \"halves\" (MarianSinusoidalPositionalEmbedding)");
    need(c.norm_placement == NormPlacement::Post && !c.encoder_final_norm && !c.decoder_final_norm,
         "norm_placement \"post\" and no final norms (MarianEncoderLayer, MarianDecoderLayer)");
    need(c.attention == AttentionStyle::SplitHeads, "attention \"split_heads\"");
    need(c.bias, "bias true (Marian's linear layers carry biases; final_logits_bias is the output's)");
  } else if (family == kFamilySeq2SeqTutorial) {
    need(c.positional_encoding == PositionalEncoding::Learned, "positional_encoding \"learned\" (pos_embedding)");
    need(!c.encoder_final_norm && !c.decoder_final_norm, "encoder_final_norm and decoder_final_norm false");
    need(c.bias, "bias true (the tutorial's linear layers carry biases)");
    need(!c.share_embeddings && !c.tie_output_embedding,
         "share_embeddings and tie_output_embedding false (the tutorial has separate embeddings and fc_out)");
  }
}

// [SECTION] the tables

namespace {

// A weight's name in a family, and its place in a tensor the family stacks from several of ours
// (nn.MultiheadAttention's in_proj_weight (3C, C) = [W_q; W_k; W_v]).
struct FamilyName {
  std::string name;
  int stack_index = 0, stack_size = 1;
  bool leading_one = false;  // stored with a leading dimension of 1: Marian's final_logits_bias (1, V)
};

const char* param_suffix(WeightParam p) { return p == WeightParam::Weight ? ".weight" : ".bias"; }

template <typename Ref>
std::optional<FamilyName> stepformer_name(const Ref& r) {
  if (!r.stored) return std::nullopt;  // shared or tied: not in the file
  return FamilyName{r.name};
}

// PyTorch's "Language Translation with nn.Transformer" tutorial (Seq2SeqTransformer).
template <typename Ref>
std::optional<FamilyName> pytorch_tutorial_name(const Ref& r) {
  const std::string suffix = param_suffix(r.param);
  switch (r.block) {
    case WeightBlock::SrcEmbedding: return FamilyName{"src_tok_emb.embedding.weight"};
    case WeightBlock::TgtEmbedding: return FamilyName{"tgt_tok_emb.embedding.weight"};
    case WeightBlock::SrcPositions:
    case WeightBlock::TgtPositions: return std::nullopt;  // sinusoidal only (check_family_config)
    case WeightBlock::EncoderNorm: return FamilyName{"transformer.encoder.norm" + suffix};
    case WeightBlock::DecoderNorm: return FamilyName{"transformer.decoder.norm" + suffix};
    case WeightBlock::Generator: return FamilyName{"generator" + suffix};
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
      if (r.projection == Projection::Out) return FamilyName{a + ".out_proj" + suffix};
      const int index = r.projection == Projection::Q ? 0 : r.projection == Projection::K ? 1 : 2;
      return FamilyName{a + (r.param == WeightParam::Weight ? ".in_proj_weight" : ".in_proj_bias"), index, 3};
    }
    case LayerPart::SelfAttnNorm: return FamilyName{p + "norm1" + suffix};
    case LayerPart::CrossAttnNorm: return FamilyName{p + "norm2" + suffix};
    case LayerPart::FfnNorm: return FamilyName{p + (encoder ? "norm2" : "norm3") + suffix};
    case LayerPart::Fc1: return FamilyName{p + "linear1" + suffix};
    case LayerPart::Fc2: return FamilyName{p + "linear2" + suffix};
    case LayerPart::None: break;
  }
  return std::nullopt;
}

// The "Attention is All You Need" notebook of the PyTorch seq2seq tutorials.
template <typename Ref>
std::optional<FamilyName> seq2seq_tutorial_name(const Ref& r) {
  const std::string suffix = param_suffix(r.param);
  switch (r.block) {
    case WeightBlock::SrcEmbedding: return FamilyName{"encoder.tok_embedding.weight"};
    case WeightBlock::SrcPositions: return FamilyName{"encoder.pos_embedding.weight"};
    case WeightBlock::TgtEmbedding: return FamilyName{"decoder.tok_embedding.weight"};
    case WeightBlock::TgtPositions: return FamilyName{"decoder.pos_embedding.weight"};
    case WeightBlock::EncoderNorm:
    case WeightBlock::DecoderNorm: return std::nullopt;  // no final norms (check_family_config)
    case WeightBlock::Generator: return FamilyName{"decoder.fc_out" + suffix};
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
    case LayerPart::SelfAttn: return FamilyName{p + "self_attention." + projection + suffix};
    case LayerPart::CrossAttn: return FamilyName{p + "encoder_attention." + projection + suffix};
    case LayerPart::SelfAttnNorm: return FamilyName{p + "self_attn_layer_norm" + suffix};
    case LayerPart::CrossAttnNorm: return FamilyName{p + "enc_attn_layer_norm" + suffix};
    case LayerPart::Fc1: return FamilyName{p + "positionwise_feedforward.fc_1" + suffix};
    case LayerPart::Fc2: return FamilyName{p + "positionwise_feedforward.fc_2" + suffix};
    case LayerPart::FfnNorm: return FamilyName{p + "ff_layer_norm" + suffix};
    case LayerPart::None: break;
  }
  return std::nullopt;
}

// The study notes' "Transformer from scratch": Encoder/Decoder modules, selfAttention's query/key/value/fc_out,
// the decoder block's own norm then an EncoderBlock (encoder_block) over the encoder output.
template <typename Ref>
std::optional<FamilyName> from_scratch_name(const Ref& r) {
  const std::string suffix = param_suffix(r.param);
  switch (r.block) {
    case WeightBlock::SrcEmbedding: return FamilyName{"Encoder.word_embedding.weight"};
    case WeightBlock::TgtEmbedding: return FamilyName{"Decoder.word_embedding.weight"};
    case WeightBlock::SrcPositions:
    case WeightBlock::TgtPositions:
    case WeightBlock::EncoderNorm:
    case WeightBlock::DecoderNorm: return std::nullopt;  // computed table, no final norms (check_family_config)
    case WeightBlock::Generator: return FamilyName{"fc_out" + suffix};
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
    case LayerPart::SelfAttn: return FamilyName{p + "attention." + projection + suffix};
    case LayerPart::SelfAttnNorm: return FamilyName{p + (encoder ? "norm1" : "norm") + suffix};
    case LayerPart::CrossAttn: return FamilyName{block + "attention." + projection + suffix};
    case LayerPart::CrossAttnNorm: return FamilyName{block + "norm1" + suffix};
    case LayerPart::Fc1: return FamilyName{block + "feed_forawrd.0" + suffix};
    case LayerPart::Fc2: return FamilyName{block + "feed_forawrd.2" + suffix};
    case LayerPart::FfnNorm: return FamilyName{block + "norm2" + suffix};
    case LayerPart::None: break;
  }
  return std::nullopt;
}

// Hugging Face's MarianMTModel (modeling_marian.py), as its model.safetensors names the weights: one shared
// embedding (model.shared) or one per side, the output tied to the target embedding (lm_head is not stored),
// the output's bias final_logits_bias (1, V), sinusoidal positions computed (check_family_config).
template <typename Ref>
std::optional<FamilyName> marian_name(const Ref& r, bool shared_embedding) {
  const std::string suffix = param_suffix(r.param);
  switch (r.block) {
    case WeightBlock::SrcEmbedding:
      return FamilyName{shared_embedding ? "model.shared.weight" : "model.encoder.embed_tokens.weight"};
    case WeightBlock::TgtEmbedding:
      if (!r.stored) return std::nullopt;  // the shared embedding
      return FamilyName{"model.decoder.embed_tokens.weight"};
    case WeightBlock::SrcPositions:
    case WeightBlock::TgtPositions:
    case WeightBlock::EncoderNorm:
    case WeightBlock::DecoderNorm: return std::nullopt;
    case WeightBlock::Generator:
      if (r.param == WeightParam::Bias) return FamilyName{"final_logits_bias", 0, 1, true};
      if (!r.stored) return std::nullopt;  // tied to the target embedding
      return FamilyName{"lm_head.weight"};
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
    case LayerPart::SelfAttn: return FamilyName{p + "self_attn." + projection + suffix};
    case LayerPart::SelfAttnNorm: return FamilyName{p + "self_attn_layer_norm" + suffix};
    case LayerPart::CrossAttn: return FamilyName{p + "encoder_attn." + projection + suffix};
    case LayerPart::CrossAttnNorm: return FamilyName{p + "encoder_attn_layer_norm" + suffix};
    case LayerPart::Fc1: return FamilyName{p + "fc1" + suffix};
    case LayerPart::Fc2: return FamilyName{p + "fc2" + suffix};
    case LayerPart::FfnNorm: return FamilyName{p + "final_layer_norm" + suffix};
    case LayerPart::None: break;
  }
  return std::nullopt;
}

// The family's slots over `weights` (const or not), from the one walk (for_each_weight) and the family's names;
// with check_shapes false (an unallocated ModelWeights) only names and shapes.
template <typename W>
auto build_slots(const std::string& family, const Config& config, W& weights, const std::string& where,
                 bool check_shapes) {
  check_family_config(family, config, where);
  using T = std::conditional_t<std::is_const_v<W>, const float, float>;
  if (check_shapes &&  // the layer lists must match the config before the walk
      (weights.encoder_layers.size() != static_cast<size_t>(config.n_encoder_layers) ||
       weights.decoder_layers.size() != static_cast<size_t>(config.n_decoder_layers)))
    fail(ErrorKind::Shape, where,
         "weights hold " + std::to_string(weights.encoder_layers.size()) + " encoder and " +
             std::to_string(weights.decoder_layers.size()) + " decoder layers, the config says " +
             std::to_string(config.n_encoder_layers) + " and " + std::to_string(config.n_decoder_layers));
  std::vector<WeightSlotT<T>> slots;
  std::map<std::string, size_t> index;  // a stacked tensor's slot, by its name
  for_each_weight(&config, weights, [&](const WeightRefT<W>& r) {
    const std::optional<FamilyName> n = family == kFamilyPytorchTutorial   ? pytorch_tutorial_name(r)
                                        : family == kFamilySeq2SeqTutorial ? seq2seq_tutorial_name(r)
                                        : family == kFamilyFromScratch     ? from_scratch_name(r)
                                        : family == kFamilyMarian          ? marian_name(r, config.share_embeddings)
                                                                           : stepformer_name(r);
    if (!n) return;
    if (check_shapes) {
      const bool fits = r.matrix ? r.matrix->rows() == r.rows && r.matrix->cols() == r.cols : r.vector->size() == r.rows;
      if (!fits) {
        const std::vector<int64_t> want = r.matrix ? std::vector<int64_t>{r.rows, r.cols} : std::vector<int64_t>{r.rows};
        const std::vector<int64_t> found = r.matrix ? std::vector<int64_t>{r.matrix->rows(), r.matrix->cols()}
                                                    : std::vector<int64_t>{r.vector->size()};
        fail(ErrorKind::Shape, where,
             "weight '" + n->name + "': expected " + shape_string(want) + ", found " + shape_string(found));
      }
    }
    auto [it, added] = index.emplace(n->name, slots.size());
    if (added) {
      std::vector<int64_t> shape = {n->stack_size * r.rows};
      if (r.cols > 0) shape.push_back(r.cols);
      if (n->leading_one) shape.insert(shape.begin(), 1);
      slots.push_back({n->name, std::move(shape), {}});
    }
    auto& slot = slots[it->second];
    if (static_cast<int>(slot.parts.size()) != n->stack_index && check_shapes)
      fail(ErrorKind::Shape, where, "weight '" + n->name + "': its parts came out of order");
    if (check_shapes) slot.parts.emplace_back(r.data(), static_cast<size_t>(r.size()));
  });
  return slots;
}

}  // namespace

std::vector<TensorSpec> weight_layout(const std::string& family, const Config& config) {
  // Walk the table over empty weights with the right number of layers: names and shapes, no allocation.
  ModelWeights empty;
  empty.encoder_layers.resize(static_cast<size_t>(std::max(config.n_encoder_layers, 0)));
  empty.decoder_layers.resize(static_cast<size_t>(std::max(config.n_decoder_layers, 0)));
  std::vector<TensorSpec> specs;
  for (auto& slot : build_slots(family, config, empty, "weight_layout", false))
    specs.push_back({std::move(slot.name), std::move(slot.shape)});
  return specs;
}

std::vector<WeightSlot> weight_slots(const std::string& family, const Config& config, ModelWeights& weights,
                                     const std::string& where) {
  return build_slots(family, config, weights, where, true);
}

std::vector<ConstWeightSlot> weight_slots(const std::string& family, const Config& config,
                                          const ModelWeights& weights, const std::string& where) {
  return build_slots(family, config, weights, where, true);
}

ModelWeights allocate_weights(const Config& c) {
  ModelWeights w;
  w.encoder_layers.resize(static_cast<size_t>(std::max(c.n_encoder_layers, 0)));
  w.decoder_layers.resize(static_cast<size_t>(std::max(c.n_decoder_layers, 0)));
  // Every weight the config has, zeros; LayerNorm gains ones (a norm that is a no-op until loaded or trained).
  for_each_weight(&c, w, [](const WeightRef& r) {
    if (r.is_matrix()) r.matrix->setZero(r.rows, r.cols);
    else r.vector->setConstant(r.rows, !r.linear && r.param == WeightParam::Weight ? 1.0f : 0.0f);
  });
  return w;
}

void complete_shared_weights(const Config& config, ModelWeights& weights) {
  if (config.share_embeddings) weights.tgt_embedding = weights.src_embedding;
  if (config.tie_output_embedding)
    weights.generator.weight = config.has_decoder() ? weights.tgt_embedding : weights.src_embedding;
}

}  // namespace sf
