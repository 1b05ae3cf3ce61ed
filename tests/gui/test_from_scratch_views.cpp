// The from-scratch family in the app (headless: no window, no GL): its attention maps are between pieces of the
// reshaped sequence, and the views say so. The attention heatmap's rows and columns carry "token [k]" labels,
// worked out here again from the note's reshape (row i of head h = piece h*T + i of the flattened sentence:
// token (h*T + i) / H, columns k*D.. with k = (h*T + i) % H); the explanation names the reshape; the Q, K, V
// stage shows the one shared (D, D) map; the lines view, which joins tokens, is not offered.
#include <gtest/gtest.h>
#include <imgui.h>

#include <cmath>
#include <map>
#include <memory>

#include "headless_imgui.h"
#include "gui/app.h"
#include "gui/render/heatmap.h"
#include "gui/render/item_placements.h"
#include "transformer/forward.h"

namespace sf::gui {
namespace {

const std::string kModel = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/from_scratch/fs_small.model.safetensors";

class FromScratchViews : public ::testing::Test {
 protected:
  void start(const std::string& stage, const std::string& head) {
    testing::start_headless_imgui();
    AppOptions options;
    options.model_path = kModel;
    options.sentence = "w5 w6 w7 w8 w9";
    options.stage = stage;
    options.attention = head;
    app_ = std::make_unique<App>(options);
    app_->finish_loading();
    testing::headless_frame(*app_);
    ASSERT_TRUE(app_->state().ready()) << app_->state().error();
    testing::headless_frame(*app_);
  }
  void TearDown() override {
    app_.reset();
    if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
  }
  std::unique_ptr<App> app_;
};

std::vector<std::string> pieces(const std::vector<std::string>& tokens, int head, int heads) {
  std::vector<std::string> out;
  const int t = static_cast<int>(tokens.size());
  for (int i = 0; i < t; ++i) {
    const int flat = head * t + i;  // the note's reshape(N, heads, len, head_dim): piece number flat
    out.push_back(tokens[static_cast<size_t>(flat / heads)] + " [" + std::to_string(flat % heads) + "]");
  }
  return out;
}

TEST_F(FromScratchViews, AttentionRowsAndColumnsNameTheTokenPiecesTheyHold) {
  start("encoder-attention", "enc.1.2");
  const Config& c = app_->state().model()->config;
  ASSERT_EQ(c.attention, AttentionStyle::ReshapeHeads);
  ASSERT_EQ(c.n_heads, 4);
  const std::vector<std::string> tokens = app_->state().source_labels();  // <bos> w5 .. w9 <eos>
  ASSERT_EQ(tokens.size(), 7u);
  const Heatmap* map = testing::drawn_heatmap("attention");
  ASSERT_NE(map, nullptr);
  const std::vector<std::string> expected = pieces(tokens, 1, 4);
  EXPECT_EQ(map->row_labels(), expected);
  EXPECT_EQ(map->col_labels(), expected);
  // Head 1's first row is piece 7: the second token's last quarter, not the first token.
  EXPECT_EQ(map->row_labels().front(), tokens[1] + " [3]");
}

TEST_F(FromScratchViews, CrossAttentionPiecesOnBothSidesAndTheQkvStageDrawsEveryHead) {
  start("cross-attention", "cross.2.4");
  const Heatmap* map = testing::drawn_heatmap("attention");
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(map->col_labels(), pieces(app_->state().source_labels(), 3, 4));
  EXPECT_EQ(map->row_labels(), pieces(app_->state().decoder_input_labels(), 3, 4));
  // The Q, K, V stage of the last head: the shared (D, D) map, not rows h*D.. of a (C, C) matrix.
  app_.reset();
  ImGui::DestroyContext();
  start("encoder-qkv", "enc.2.4");
  const Heatmap* w_q = testing::drawn_heatmap("qkv_weight_q");
  ASSERT_NE(w_q, nullptr);
  const int D = app_->state().model()->config.head_dim();
  EXPECT_EQ(w_q->rows(), D);
  EXPECT_EQ(w_q->cols(), D);
  const Heatmap* q = testing::drawn_heatmap("q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->row_labels(), pieces(app_->state().source_labels(), 3, 4));
}

// The decoding timeline's probabilities are those each token was chosen with. In this family the final pass's
// row i sees later tokens (the reshape mixes them into every head), so it is not the step's distribution: the
// timeline reads the decoder's own record, checked here against a pass over each prefix alone.
TEST_F(FromScratchViews, TheTimelineShowsTheProbabilityEachTokenWasChosenWith) {
  start("decoding", "enc.1.1");
  const AppState& s = app_->state();
  ASSERT_FALSE(s.translation().empty());
  std::map<int, float> shown;
  for (const auto& item : item_placements())
    if (item.name == "timeline.token") shown[item.index] = item.value;
  ASSERT_EQ(shown.size(), s.translation().size());
  const Model& m = *s.model();
  int differs_from_the_last_pass = 0;
  for (size_t i = 0; i < s.translation().size(); ++i) {
    std::vector<int> prefix = {m.config.bos_id};
    prefix.insert(prefix.end(), s.translation().begin(), s.translation().begin() + static_cast<long>(i));
    const Trace alone = forward(m.config, m.weights, s.trace().src.ids, prefix, s.interventions());
    const float p = alone.probs(static_cast<Eigen::Index>(i), s.translation()[i]);
    EXPECT_NEAR(shown[static_cast<int>(i)], p, 1e-5f) << "token " << i;
    if (std::abs(s.trace().probs(static_cast<Eigen::Index>(i), s.translation()[i]) - p) > 1e-4f) ++differs_from_the_last_pass;
  }
  EXPECT_GT(differs_from_the_last_pass, 0) << "the last pass's rows happen to agree: the test shows nothing";
}

}  // namespace
}  // namespace sf::gui
