// The stage table (gui/stages.h): each stage described once, and what the app reads from it: the attention map of
// each kind, the layer a stage belongs to, which model shapes have it, its header detail.
#include <gtest/gtest.h>

#include <set>

#include "gui/stages.h"

namespace sf::gui {
namespace {

TEST(StageTable, EachKindOfAttentionHasOneMapStageAndItBelongsToThatLayer) {
  std::set<Stage> maps;
  for (AttentionKind kind : {AttentionKind::Encoder, AttentionKind::Decoder, AttentionKind::Cross}) {
    const Stage s = attention_stage(kind);
    EXPECT_TRUE(stage_info(s).attention_map) << stage_name(s);
    EXPECT_EQ(stage_info(s).layer_of, kind) << stage_name(s);
    EXPECT_EQ(stage_info(s).detail, StageDetail::LayerHead) << stage_name(s);
    maps.insert(s);
  }
  EXPECT_EQ(maps, (std::set<Stage>{Stage::EncoderAttention, Stage::DecoderAttention, Stage::CrossAttention}));
  int map_stages = 0;
  for (int i = 0; i < static_cast<int>(Stage::Count); ++i) map_stages += stage_info(static_cast<Stage>(i)).attention_map;
  EXPECT_EQ(map_stages, 3);
}

TEST(StageTable, RowsAreInStageOrderWithUniqueIdsThatParseBack) {
  std::set<std::string> ids;
  for (int i = 0; i < static_cast<int>(Stage::Count); ++i) {
    const Stage s = static_cast<Stage>(i);
    EXPECT_EQ(stage_info(s).stage, s);
    EXPECT_TRUE(ids.insert(stage_info(s).id).second) << stage_info(s).id;
    Stage back;
    ASSERT_TRUE(stage_from_name(stage_info(s).id, &back));
    EXPECT_EQ(back, s);
    // A stage inside a layer says which layer in the presentation header; the others say nothing of one.
    if (stage_info(s).layer_of) {
      EXPECT_NE(stage_info(s).detail, StageDetail::None) << stage_info(s).id;
    }
  }
}

TEST(StageTable, EachShapeHasItsStages) {
  // The encoder-decoder has every stage; a decoder-only model no encoder stage and no cross-attention; an
  // encoder-only model no decoder stage and no decoding.
  for (int i = 0; i < static_cast<int>(Stage::Count); ++i)
    EXPECT_TRUE(stage_in_shape(static_cast<Stage>(i), ModelStacks::EncoderDecoder)) << i;
  EXPECT_FALSE(stage_in_shape(Stage::EncoderAttention, ModelStacks::DecoderOnly));
  EXPECT_FALSE(stage_in_shape(Stage::EncoderFeedForward, ModelStacks::DecoderOnly));
  EXPECT_FALSE(stage_in_shape(Stage::CrossAttention, ModelStacks::DecoderOnly));
  EXPECT_TRUE(stage_in_shape(Stage::DecoderAttention, ModelStacks::DecoderOnly));
  EXPECT_TRUE(stage_in_shape(Stage::Decoding, ModelStacks::DecoderOnly));
  EXPECT_FALSE(stage_in_shape(Stage::DecoderAttention, ModelStacks::EncoderOnly));
  EXPECT_FALSE(stage_in_shape(Stage::CrossAttention, ModelStacks::EncoderOnly));
  EXPECT_FALSE(stage_in_shape(Stage::Decoding, ModelStacks::EncoderOnly));
  EXPECT_TRUE(stage_in_shape(Stage::EncoderAttention, ModelStacks::EncoderOnly));
  EXPECT_TRUE(stage_in_shape(Stage::Output, ModelStacks::EncoderOnly));
}

}  // namespace
}  // namespace sf::gui
