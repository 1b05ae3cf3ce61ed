// Panel logic without a window or GL: Dear ImGui runs headless (font atlas built, display size set, input
// fed by hand), the app builds real frames on a real model file, and the tests inspect what it laid out.
#include <gtest/gtest.h>

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <cstdio>
#include <set>

#include "headless_imgui.h"
#include "gui/app.h"
#include "gui/render/heatmap.h"
#include "gui/widgets.h"

namespace sf::gui {
namespace {

const std::string kModel = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/models/pytorch_tutorial_tiny.safetensors";

class Headless : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::start_headless_imgui();
    AppOptions options;
    options.model_path = kModel;
    options.sentence = "Ein Mann mit einer Frau.";
    app_ = std::make_unique<App>(options);
    app_->finish_loading();  // the model loads in the background; these tests start with it in
  }
  void TearDown() override {
    app_.reset();
    ImGui::DestroyContext();
  }
  // One frame; `key` (a GLFW key code) is held down during it.
  void frame(int key = -1, ImVec2 mouse = ImVec2(-1, -1)) { testing::headless_frame(*app_, key, mouse); }
  // The stage's own maps (not the tokens stage's pictures of the other stages).
  std::set<std::string> drawn() const {
    std::set<std::string> names;
    for (const auto& p : heatmap_placements())
      if (p.name.rfind("thumbnail_", 0) != 0) names.insert(p.name);
    return names;
  }
  std::unique_ptr<App> app_;
};

TEST_F(Headless, OpensOnTheModelWithATranslation) {
  frame();
  ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  EXPECT_EQ(app_->state().model_path(), kModel);
  EXPECT_FALSE(app_->state().translation().empty());
  EXPECT_GT(ImGui::GetDrawData()->TotalVtxCount, 100);
}

TEST_F(Headless, RightAndLeftArrowsWalkThePipeline) {
  frame();
  EXPECT_TRUE(drawn().empty()) << "the tokens stage draws no map of its own";
  int thumbnails = 0;
  for (const auto& p : heatmap_placements()) thumbnails += p.name.rfind("thumbnail_", 0) == 0;
  EXPECT_EQ(thumbnails, 9) << "a picture of every stage along the pipeline";
  frame(GLFW_KEY_RIGHT);  // -> embedding
  frame();
  EXPECT_TRUE(drawn().count("embedding"));
  frame(GLFW_KEY_RIGHT);  // -> positional encoding
  frame();
  EXPECT_TRUE(drawn().count("positional_encoding"));
  frame(GLFW_KEY_RIGHT);  // -> Q, K, V
  frame();                // (a key press is a key going down: release it between presses)
  frame(GLFW_KEY_RIGHT);  // -> encoder self-attention
  frame();
  EXPECT_TRUE(drawn().count("attention"));
  frame(GLFW_KEY_LEFT);  // back to Q, K, V
  frame();
  EXPECT_TRUE(drawn().count("q"));
}

TEST_F(Headless, NumberKeysPickAHeadAndUpDownALayer) {
  ASSERT_TRUE(app_->go_to("encoder-attention"));
  frame();
  ASSERT_EQ(app_->attention().layer, 0);
  ASSERT_EQ(app_->attention().head, 0);
  // The attention heatmap drawn last frame holds the probabilities of `layer`, `head` of the encoder.
  auto expect_drawn_head = [&](int layer, int head) {
    const Mat& probs = app_->state().trace().encoder[static_cast<size_t>(layer)].self_attn.probs[static_cast<size_t>(head)];
    const Heatmap* map = nullptr;
    for (const auto& p : heatmap_placements())
      if (p.name == "attention") map = p.heatmap;
    ASSERT_NE(map, nullptr);
    ASSERT_EQ(map->rows(), probs.rows());
    ASSERT_EQ(map->cols(), probs.cols());
    for (int i = 0; i < map->rows(); ++i)
      for (int j = 0; j < map->cols(); ++j)
        ASSERT_EQ(map->value(i, j), probs(i, j)) << "layer " << layer << " head " << head << " cell " << i << "," << j;
  };
  expect_drawn_head(0, 0);
  frame(GLFW_KEY_3);  // head 3: index 2
  frame();
  EXPECT_EQ(app_->attention().head, 2);
  EXPECT_EQ(app_->attention().layer, 0);
  expect_drawn_head(0, 2);
  frame(GLFW_KEY_UP);  // up the stack: layer 1
  frame();
  EXPECT_EQ(app_->attention().layer, 1);
  EXPECT_EQ(app_->attention().head, 2);
  expect_drawn_head(1, 2);
  frame(GLFW_KEY_UP);  // the tiny model has 2 layers: stays at the top
  frame();
  EXPECT_EQ(app_->attention().layer, 1);
  frame(GLFW_KEY_DOWN);
  frame();
  EXPECT_EQ(app_->attention().layer, 0);
  frame(GLFW_KEY_1);
  frame();
  EXPECT_EQ(app_->attention().head, 0);
  expect_drawn_head(0, 0);
}

TEST_F(Headless, AllHeadsGridHasOneMapPerLayerAndHead) {
  ASSERT_TRUE(app_->go_to("all-heads"));
  frame();
  frame();
  const Config& c = app_->state().model()->config;
  int maps = 0;
  for (const auto& p : heatmap_placements()) {
    if (p.name.rfind("head_", 0) != 0) continue;
    ++maps;
    // head_L_H holds encoder layer L, head H's probabilities (numbered from 1), and sits in row L, column H of the
    // grid.
    int layer = -1, head = -1;
    ASSERT_EQ(std::sscanf(p.name.c_str(), "head_%d_%d", &layer, &head), 2) << p.name;
    --layer, --head;
    const Mat& probs = app_->state().trace().encoder[static_cast<size_t>(layer)].self_attn.probs[static_cast<size_t>(head)];
    ASSERT_EQ(p.heatmap->rows(), probs.rows());
    for (int i = 0; i < p.heatmap->rows(); ++i)
      for (int j = 0; j < p.heatmap->cols(); ++j) ASSERT_EQ(p.heatmap->value(i, j), probs(i, j)) << p.name;
    for (const auto& q : heatmap_placements()) {
      int l2 = -1, h2 = -1;
      if (std::sscanf(q.name.c_str(), "head_%d_%d", &l2, &h2) != 2) continue;
      --l2, --h2;
      if (l2 == layer && h2 > head) {
        EXPECT_GT(q.min.x, p.min.x) << q.name << " is not right of " << p.name;
      }
      if (h2 == head && l2 > layer) {
        EXPECT_GT(q.min.y, p.min.y) << q.name << " is not below " << p.name;
      }
    }
  }
  EXPECT_EQ(maps, c.n_encoder_layers * c.n_heads);
}

TEST_F(Headless, HoveringAHeatmapRowHighlightsItsTokenEverywhere) {
  ASSERT_TRUE(app_->go_to("embedding"));
  frame();
  HeatmapPlacement map;
  for (const auto& p : heatmap_placements())
    if (p.name == "embedding") map = p;
  ASSERT_GT(map.rows, 2);
  // The mouse over row 2 of the embedding strip: next frame, token 2 of the source is the hovered token.
  const ImVec2 over_row_2(map.min.x + 5, map.min.y + (2.5f) * (map.max.y - map.min.y) / map.rows);
  frame(-1, over_row_2);
  frame(-1, over_row_2);
  EXPECT_TRUE(is_hovered_token(TokenSide::Source, 2));
  EXPECT_FALSE(is_hovered_token(TokenSide::Source, 1));
}

TEST_F(Headless, ABadSentenceIsReportedAndTheTranslationStays) {
  frame();
  const auto translation = app_->state().translation();
  EXPECT_FALSE(app_->set_sentence(""));
  EXPECT_FALSE(app_->state().error().empty());
  EXPECT_EQ(app_->state().translation(), translation);
  frame();  // the error line is drawn, nothing crashes
}

}  // namespace
}  // namespace sf::gui
