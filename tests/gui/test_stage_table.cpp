// The stage table (gui/stages.h): each stage described once, and what the app reads from it: the attention map of
// each kind, the layer a stage belongs to, which model shapes have it, its header detail.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <typeinfo>

#include "gui/headless_imgui.h"
#include "gui/panels/add_norm_panel.h"
#include "gui/panels/attention_panel.h"
#include "gui/panels/pipeline_map_panel.h"
#include "gui/panels/tokens_panel.h"
#include "gui/render/item_placements.h"
#include "gui/stage_panels.h"
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
  EXPECT_FALSE(stage_in_shape(Stage::EncoderAddNorm, ModelStacks::DecoderOnly));
  EXPECT_FALSE(stage_in_shape(Stage::EncoderFeedForward, ModelStacks::DecoderOnly));
  EXPECT_FALSE(stage_in_shape(Stage::CrossAttention, ModelStacks::DecoderOnly));
  EXPECT_TRUE(stage_in_shape(Stage::DecoderAttention, ModelStacks::DecoderOnly));
  EXPECT_TRUE(stage_in_shape(Stage::Decoding, ModelStacks::DecoderOnly));
  EXPECT_FALSE(stage_in_shape(Stage::DecoderAttention, ModelStacks::EncoderOnly));
  EXPECT_FALSE(stage_in_shape(Stage::CrossAttention, ModelStacks::EncoderOnly));
  EXPECT_FALSE(stage_in_shape(Stage::Decoding, ModelStacks::EncoderOnly));
  EXPECT_TRUE(stage_in_shape(Stage::EncoderAttention, ModelStacks::EncoderOnly));
  EXPECT_TRUE(stage_in_shape(Stage::Output, ModelStacks::EncoderOnly));
  // Training trains translators, GPTs and BERTs (Multi30k's recipes): every shape.
  EXPECT_TRUE(stage_in_shape(Stage::Training, ModelStacks::DecoderOnly));
  EXPECT_TRUE(stage_in_shape(Stage::Training, ModelStacks::EncoderDecoder));
  EXPECT_TRUE(stage_in_shape(Stage::Training, ModelStacks::EncoderOnly));
}

// A stage a shape lacks is shown as its counterpart (a --stage, a lesson's stage, the stage on show when another
// model opens), and that counterpart is one of the shape's stages; the shape's stages keep the table's order.
TEST(StageTable, EachStageHasACounterpartInEveryShape) {
  for (ModelStacks stacks : {ModelStacks::EncoderDecoder, ModelStacks::DecoderOnly, ModelStacks::EncoderOnly}) {
    const std::vector<Stage> order = stages_of_shape(stacks);
    for (int i = 0; i < static_cast<int>(Stage::Count); ++i) {
      const Stage s = static_cast<Stage>(i);
      EXPECT_TRUE(stage_in_shape(stage_for_shape(s, stacks), stacks)) << stage_name(s) << " in " << to_string(stacks);
      if (stage_in_shape(s, stacks)) {
        EXPECT_EQ(stage_for_shape(s, stacks), s);
      }
    }
    for (size_t k = 1; k < order.size(); ++k) EXPECT_LT(static_cast<int>(order[k - 1]), static_cast<int>(order[k]));
  }
  EXPECT_EQ(stage_for_shape(Stage::EncoderAttention, ModelStacks::DecoderOnly), Stage::DecoderAttention);
  EXPECT_EQ(stage_for_shape(Stage::CrossAttention, ModelStacks::DecoderOnly), Stage::DecoderAttention);
  EXPECT_EQ(stage_for_shape(Stage::EncoderFeedForward, ModelStacks::DecoderOnly), Stage::DecoderFeedForward);
  EXPECT_EQ(stages_of_shape(ModelStacks::EncoderDecoder).size(), static_cast<size_t>(Stage::Count));
  const std::string why = stage_missing_text(Stage::EncoderAttention, ModelStacks::DecoderOnly);
  EXPECT_NE(why.find("encoder-attention"), std::string::npos) << why;
  EXPECT_NE(why.find("decoder-attention"), std::string::npos) << why;
}

// The table's panel column: every stage has a panel, a stage's panel is the class its line names, and stages of
// one class share one panel (the attention panel's zoom and opened cell stay when the kind changes).
TEST(StageTable, EveryStageIsDrawnByThePanelItsLineNames) {
  StagePanels panels;
  std::map<const StagePanel*, std::set<Stage>> drawn_by;
  for (int i = 0; i < static_cast<int>(Stage::Count); ++i) {
    const Stage s = static_cast<Stage>(i);
    drawn_by[&panels.for_stage(s)].insert(s);
    EXPECT_EQ(&panels.for_stage(s), &panels.for_stage(s)) << "made again: " << stage_name(s);
  }
  EXPECT_EQ(drawn_by.size(), 13u) << "thirteen panel classes draw the seventeen stages";
  const StagePanel* attention = &panels.get<AttentionPanel>();
  EXPECT_EQ(drawn_by[attention], (std::set<Stage>{Stage::EncoderAttention, Stage::DecoderAttention, Stage::CrossAttention}));
  EXPECT_EQ(drawn_by[&panels.get<AddNormPanel>()], (std::set<Stage>{Stage::EncoderAddNorm, Stage::DecoderAddNorm}));
  EXPECT_EQ(drawn_by[&panels.get<TokensPanel>()], (std::set<Stage>{Stage::Tokens}));
  // (the attention-map stages are the attention panel's, and it draws no other)
  for (int i = 0; i < static_cast<int>(Stage::Count); ++i) {
    const Stage s = static_cast<Stage>(i);
    EXPECT_EQ(stage_info(s).attention_map, &panels.for_stage(s) == attention) << stage_name(s);
  }
}

// The pipeline map draws the model's own shape: two columns with the encoder's K, V into the cross-attention for
// the encoder-decoder, one column for a decoder-only or an encoder-only model; each box opens a stage that shape
// has, and every stage inside a layer of that shape has its box.
TEST(PipelineMap, DrawsTheModelsShape) {
  struct Expect {
    ModelStacks stacks;
    int columns;
    bool cross;
  };
  for (const Expect& e : {Expect{ModelStacks::EncoderDecoder, 2, true}, Expect{ModelStacks::DecoderOnly, 1, false},
                          Expect{ModelStacks::EncoderOnly, 1, false}}) {
    const PipelineLayout layout = pipeline_layout(e.stacks);
    const std::string shape = to_string(e.stacks);
    EXPECT_EQ(layout.columns, e.columns) << shape;
    EXPECT_EQ(layout.cross_attention >= 0, e.cross) << shape;
    std::set<Stage> boxed;
    for (const PipelineBox& b : layout.boxes) {
      EXPECT_TRUE(stage_in_shape(b.stage, e.stacks)) << shape << ": a box for " << stage_name(b.stage);
      EXPECT_GE(b.column, 0);
      EXPECT_LT(b.column, layout.columns) << shape;
      EXPECT_LT(b.row, layout.top_row) << shape;
      boxed.insert(b.stage);
    }
    for (int i = 0; i < static_cast<int>(Stage::Count); ++i) {
      const Stage s = static_cast<Stage>(i);
      const bool figure = stage_info(s).layer_of.has_value() || s == Stage::Tokens || s == Stage::Embedding ||
                          s == Stage::Positional || s == Stage::Output;
      // (Q/K/V and concat show the selected kind's projections: their boxes stand in the encoder's column)
      const bool encoder_column_only = s == Stage::EncoderQkv || s == Stage::EncoderConcat;
      if (figure && stage_in_shape(s, e.stacks) && !(encoder_column_only && layout.encoder_column < 0)) {
        EXPECT_TRUE(boxed.count(s)) << shape << ": no box for " << stage_name(s);
      }
    }
    // Each column is bottom to top: the rows of a column rise; every residual ends in an add & norm above it.
    for (size_t i = 1; i < layout.boxes.size(); ++i) {
      if (layout.boxes[i].column == layout.boxes[i - 1].column) {
        EXPECT_GT(layout.boxes[i].row, layout.boxes[i - 1].row);
      }
    }
    for (const PipelineResidual& r : layout.residuals) {
      const PipelineBox& into = layout.boxes[static_cast<size_t>(r.into)];
      EXPECT_TRUE(into.stage == Stage::EncoderAddNorm || into.stage == Stage::DecoderAddNorm) << shape;
      EXPECT_GT(into.row, layout.boxes[static_cast<size_t>(r.from)].row) << shape;
    }
    EXPECT_EQ(layout.residuals.size(), e.stacks == ModelStacks::EncoderDecoder ? 5u : 2u)
        << shape;
  }
}

// Drawn (headless), the map puts one button per box of the layout, side by side in as many columns.
TEST(PipelineMap, DrawsOneButtonPerBoxInItsColumns) {
  start_headless_imgui();
  for (ModelStacks stacks : {ModelStacks::EncoderDecoder, ModelStacks::DecoderOnly, ModelStacks::EncoderOnly}) {
    Config config;
    config.stacks = stacks;
    PipelineMapView view;
    view.config = &config;
    ImGui::NewFrame();
    begin_item_frame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(300, 800));
    ImGui::Begin("map");
    Stage clicked;
    draw_pipeline_map(view, &clicked);
    ImGui::End();
    ImGui::EndFrame();
    const PipelineLayout layout = pipeline_layout(stacks);
    std::set<float> lefts;
    size_t boxes = 0;
    for (const ItemPlacement& item : item_placements())
      if (item.name == "pipeline.box") {
        ++boxes;
        lefts.insert(item.min.x);
        EXPECT_EQ(item.text, stage_name(layout.boxes[static_cast<size_t>(item.index)].stage));
      }
    EXPECT_EQ(boxes, layout.boxes.size()) << to_string(stacks);
    EXPECT_EQ(lefts.size(), static_cast<size_t>(layout.columns)) << to_string(stacks);
  }
  ImGui::DestroyContext();
}

}  // namespace
}  // namespace sf::gui
