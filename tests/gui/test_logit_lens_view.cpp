// The output stage's "each layer's guess" view (panels/logit_lens_panel.h): a cell per layer and position, the top
// row the model's own output (the token it chose at every position), the cells recomputed when an intervention
// changes the trace, a click on a column showing that position; the same for an encoder-only model's blanks; and
// the script's `output-view`.
#include <gtest/gtest.h>

#include <imgui.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "explain/logit_lens.h"
#include "gui/app.h"
#include "gui/panels/logit_lens_panel.h"
#include "gui/render/item_placements.h"
#include "gui/script/script_parse.h"
#include "output_stage_app.h"
#include "util/paths.h"

namespace sf::gui {
namespace {

class LensApp : public testing::OutputStageApp {
 protected:
  void start(const std::string& model, const std::string& sentence) {
    OutputStageApp::start(model, sentence, OutputView::Lens);
  }
  // Frames until the view shows the lens of the trace on show (its cells drawn, "computing" gone), at most 10 s.
  void settle() {
    app_->mutable_state().finish_background();
    for (int i = 0; i < 1000; ++i) {
      frame();
      if (!cells().empty() && !computing()) return;
    }
    FAIL() << "the lens never appeared";
  }
  static bool computing() { return !named("lens.computing").empty(); }
  // The drawn cells by index (layer * rows + row).
  static std::map<int, ItemPlacement> cells() { return named("lens.cell"); }
};

// The shipped translator: layers x positions cells; the top row is the token the model chose at each position,
// with the probability it had; the bars under the grid give the chosen token's probability layer by layer, the
// last equal to the top cell's.
TEST_F(LensApp, TheTranslatorsTopRowIsItsOutputAndTheBarsFollowTheChosenToken) {
  start(shipped_model_path("de-en"), "Ein Mann in einem orangefarbenen Hemd steht auf der Straße.");
  settle();
  const AppState& state = app_->state();
  ASSERT_TRUE(state.ready());
  const int L = state.model()->config.n_decoder_layers, rows = static_cast<int>(state.trace().logits.rows());
  const std::map<int, ItemPlacement> grid = cells();
  ASSERT_EQ(static_cast<int>(grid.size()), L * rows);
  const std::vector<int> chosen = LogitLensPanel::chosen_ids(state);
  ASSERT_EQ(static_cast<int>(chosen.size()), rows);
  int compared = 0;
  for (int r = 0; r < rows; ++r) {
    if (chosen[static_cast<size_t>(r)] < 0) continue;
    const ItemPlacement& top = grid.at((L - 1) * rows + r);
    EXPECT_EQ(top.text, state.target_token(chosen[static_cast<size_t>(r)])) << "row " << r;  // greedy: the argmax
    EXPECT_NEAR(top.value, state.trace().probs(r, chosen[static_cast<size_t>(r)]), 1e-5) << "row " << r;
    ++compared;
  }
  EXPECT_GE(compared, 10);
  // The cells are laid out as a grid: the output's row above layer 1's, positions left to right.
  EXPECT_LT(grid.at((L - 1) * rows).min.y, grid.at(0).min.y);
  EXPECT_LT(grid.at(0).min.x, grid.at(1).min.x);
  // The bars: one per layer for the position on show, the top one the chosen token's probability there.
  const std::map<int, ItemPlacement> bars = named("lens.chosen");
  ASSERT_EQ(static_cast<int>(bars.size()), L);
  const int position = app_->output_position();
  EXPECT_NEAR(bars.at(L - 1).value, state.trace().probs(position, chosen[static_cast<size_t>(position)]), 1e-5);
  EXPECT_LT(bars.at(0).value, bars.at(L - 1).value) << "layer 1 is less sure of the word than the output";
}

// An intervention changes the trace: the lens follows (a cell's probability changes), and a click on a column
// shows that position.
TEST_F(LensApp, AnInterventionRecomputesItAndAClickPicksThePosition) {
  start(shipped_model_path("de-en"), "Ein Mann in einem orangefarbenen Hemd steht auf der Straße.");
  settle();
  const std::map<int, ItemPlacement> before = cells();
  Interventions iv;
  for (int h = 0; h < app_->state().model()->config.n_heads; ++h) iv.heads_off.push_back({AttentionKind::Cross, 2, h});
  ASSERT_TRUE(app_->set_interventions(iv)) << app_->state().error();
  settle();
  const std::map<int, ItemPlacement> after = cells();
  ASSERT_FALSE(after.empty());
  bool changed = false;
  for (const auto& [index, cell] : after)
    if (before.count(index) && std::abs(before.at(index).value - cell.value) > 1e-4f) changed = true;
  EXPECT_TRUE(changed) << "the last layer's cross-attention off changes what the layers predict";
  click(after.at(2));  // layer 1, position 2
  EXPECT_EQ(app_->output_position(), 2);
}

// An encoder-only model: the top row at a blank is the word the model fills it with.
TEST_F(LensApp, ABertsTopRowAtTheBlankIsItsFill) {
  start(shipped_model_path("bert-en"), "a man in an orange shirt is standing on the street .");
  ASSERT_TRUE(app_->mutable_state().toggle_mask(6)) << app_->state().error();
  settle();
  const AppState& state = app_->state();
  const int L = state.model()->config.n_encoder_layers, rows = static_cast<int>(state.trace().logits.rows());
  const std::map<int, ItemPlacement> grid = cells();
  ASSERT_EQ(static_cast<int>(grid.size()), L * rows);
  const std::vector<int> filled = state.predicted_ids();
  EXPECT_EQ(grid.at((L - 1) * rows + 6).text, state.source_token(filled[6]));
  EXPECT_NEAR(grid.at((L - 1) * rows + 6).value, state.trace().probs.row(6).maxCoeff(), 1e-5);
}

// The script's `output-view`: its two words, and nothing else.
TEST(OutputViewCommand, TakesProbabilitiesOrLens) {
  std::string error;
  EXPECT_TRUE(parse_script("output-view lens\noutput-view probabilities\n", "test", error)) << error;
  EXPECT_FALSE(parse_script("output-view bars\n", "test", error));
  EXPECT_NE(error.find("'output-view' takes probabilities, lens or why, got 'bars'"), std::string::npos) << error;
}

}  // namespace
}  // namespace sf::gui
