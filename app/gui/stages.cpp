#include "gui/stages.h"

namespace sf::gui {

namespace {

constexpr auto kEnc = AttentionKind::Encoder, kDec = AttentionKind::Decoder, kCross = AttentionKind::Cross;
using D = StageDetail;
using S = StageShapes;

const StageInfo kStages[] = {
#define STAGE(stage, id, title, layer_of, map, detail, shapes, panel) \
  {Stage::stage, id, T::title, layer_of, map, D::detail, S::shapes},
#include "gui/stages.inc"
#undef STAGE
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

Stage stage_for_shape(Stage stage, ModelStacks stacks) {
  if (stage_in_shape(stage, stacks)) return stage;
  const bool decoder = stacks != ModelStacks::EncoderOnly;
  switch (stage) {
    case Stage::EncoderAttention:
    case Stage::CrossAttention: return decoder ? Stage::DecoderAttention : Stage::EncoderAttention;
    case Stage::EncoderAddNorm: return Stage::DecoderAddNorm;
    case Stage::EncoderFeedForward: return Stage::DecoderFeedForward;
    case Stage::DecoderAttention: return Stage::EncoderAttention;
    case Stage::DecoderAddNorm: return Stage::EncoderAddNorm;
    case Stage::DecoderFeedForward: return Stage::EncoderFeedForward;
    case Stage::Decoding: return Stage::Output;
    default: break;
  }
  return Stage::Tokens;
}

std::vector<Stage> stages_of_shape(ModelStacks stacks) {
  std::vector<Stage> out;
  for (const StageInfo& info : kStages)
    if (stage_in_shape(info.stage, stacks)) out.push_back(info.stage);
  return out;
}

std::string shape_text(ModelStacks stacks) {
  switch (stacks) {
    case ModelStacks::EncoderDecoder: return tr(T::shape_encoder_decoder);
    case ModelStacks::DecoderOnly: return tr(T::shape_decoder_only);
    case ModelStacks::EncoderOnly: return tr(T::shape_encoder_only);
  }
  return to_string(stacks);
}

std::string stage_missing_text(Stage stage, ModelStacks stacks) {
  Config shape;
  shape.stacks = stacks;
  const StageInfo& info = stage_info(stage);
  const T why = info.layer_of == AttentionKind::Cross && shape.has_decoder() ? T::shape_missing_cross
                : !shape.has_encoder()                                         ? T::shape_missing_encoder
                                                                               : T::shape_missing_decoder;
  return tr(why, {{"stage", info.id}, {"shape", shape_text(stacks)}, {"nearest", stage_name(stage_for_shape(stage, stacks))}});
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
