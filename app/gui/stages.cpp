#include "gui/stages.h"

namespace sf::gui {

namespace {

constexpr auto kEnc = AttentionKind::Encoder, kDec = AttentionKind::Decoder, kCross = AttentionKind::Cross;
using D = StageDetail;
using S = StageShapes;

// In Stage order (the enum). The Q/K/V and concat stages show the selected kind's projections (encoder, decoder
// or cross), opened on the encoder's.
const StageInfo kStages[] = {
    // stage                     id                      title                                layer_of map   detail             shapes
    {Stage::Tokens,             "tokens",               T::stage_title_tokens,               {},     false, D::None,          S::Every},
    {Stage::Embedding,          "embedding",            T::stage_title_embedding,            {},     false, D::None,          S::Every},
    {Stage::Positional,         "positional",           T::stage_title_positional,           {},     false, D::None,          S::Every},
    {Stage::EncoderQkv,         "encoder-qkv",          T::stage_title_encoder_qkv,          kEnc,   false, D::LayerHead,     S::Every},
    {Stage::EncoderAttention,   "encoder-attention",    T::stage_title_encoder_attention,    kEnc,   true,  D::LayerHead,     S::WithEncoder},
    {Stage::EncoderConcat,      "concat-heads",         T::stage_title_concat_heads,         kEnc,   false, D::KindLayer,     S::Every},
    {Stage::EncoderAddNorm,     "encoder-add-norm",     T::stage_title_encoder_add_norm,     kEnc,   false, D::Layer,         S::WithEncoder},
    {Stage::EncoderFeedForward, "encoder-feed-forward", T::stage_title_encoder_feed_forward, kEnc,   false, D::Layer,         S::WithEncoder},
    {Stage::DecoderAttention,   "decoder-attention",    T::stage_title_decoder_attention,    kDec,   true,  D::LayerHead,     S::WithDecoder},
    {Stage::CrossAttention,     "cross-attention",      T::stage_title_cross_attention,      kCross, true,  D::LayerHead,     S::EncoderDecoder},
    {Stage::DecoderAddNorm,     "decoder-add-norm",     T::stage_title_decoder_add_norm,     kDec,   false, D::Layer,         S::WithDecoder},
    {Stage::DecoderFeedForward, "decoder-feed-forward", T::stage_title_decoder_feed_forward, kDec,   false, D::Layer,         S::WithDecoder},
    {Stage::AllHeads,           "all-heads",            T::stage_title_all_heads,            {},     false, D::KindAttention, S::Every},
    {Stage::Output,             "output",               T::stage_title_output,               {},     false, D::None,          S::Every},
    {Stage::Decoding,           "decoding",             T::stage_title_decoding,             {},     false, D::None,          S::WithDecoder},
    {Stage::Interventions,      "interventions",        T::stage_title_interventions,        {},     false, D::None,          S::Every},
    {Stage::Training,           "training",             T::stage_title_training,             {},     false, D::None,          S::Every},
};
static_assert(sizeof(kStages) / sizeof(kStages[0]) == static_cast<size_t>(Stage::Count));

}  // namespace

const StageInfo& stage_info(Stage stage) { return kStages[static_cast<int>(stage)]; }

Stage attention_stage(AttentionKind kind) {
  for (const StageInfo& info : kStages)
    if (info.attention_map && info.layer_of == kind) return info.stage;
  return Stage::EncoderAttention;  // (every kind has one: tests/gui/test_stage_table.cpp)
}

bool stage_in_shape(Stage stage, ModelStacks stacks) {
  Config shape;
  shape.stacks = stacks;
  switch (stage_info(stage).shapes) {
    case StageShapes::Every: return true;
    case StageShapes::WithEncoder: return shape.has_encoder();
    case StageShapes::WithDecoder: return shape.has_decoder();
    case StageShapes::EncoderDecoder: return shape.has_cross_attention();
  }
  return false;
}

bool stage_from_name(const std::string& id, Stage* stage) {
  for (const StageInfo& info : kStages)
    if (id == info.id) {
      *stage = info.stage;
      return true;
    }
  return false;
}

std::string stage_names() {
  std::string out;
  for (const StageInfo& info : kStages) out += (out.empty() ? "" : ", ") + std::string(info.id);
  return out;
}

}  // namespace sf::gui
