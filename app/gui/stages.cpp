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
