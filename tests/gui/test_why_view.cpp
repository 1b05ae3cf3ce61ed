// The output stage's "Why this word?" view (panels/attribution_panel.h): a bar per input word equal to the core's
// attribution of the chosen token at the position on show (explain/attribution.h, itself held equal to PyTorch
// autograd), the last layer's mean attention under the same words, the whole sentence's map beside the attention
// map; an intervention recomputes it, the method switch changes it, a click on a map row picks the position; the
// same for a GPT and a BERT; and the script's `output-view why` and `why-method`.
#include <gtest/gtest.h>

#include <imgui.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "explain/attribution.h"
#include "gui/app.h"
#include "gui/panels/logit_lens_panel.h"
#include "gui/render/item_placements.h"
#include "gui/script/script_parse.h"
#include "output_stage_app.h"
#include "transformer/forward.h"
#include "util/paths.h"

namespace sf::gui {
namespace {

class WhyApp : public testing::OutputStageApp {
 protected:
  void start(const std::string& model, const std::string& sentence) {
    OutputStageApp::start(model, sentence, OutputView::Why);
  }
  // Frames until the view shows the bars and the whole map of the trace on show, at most 60 s.
  void settle() {
    app_->mutable_state().finish_background();
    for (int i = 0; i < 6000; ++i) {
      frame();
      if (!named("why.bar").empty() && !named("why.map").empty() && named("why.computing").empty()) return;
    }
    FAIL() << "the attributions never appeared";
  }
  // The core's attribution of the chosen token at `row` of the trace on show, by `method`.
  std::vector<float> expected_row(int row, AttributionMethod method) const {
    const AppState& state = app_->state();
    const Config& c = state.model()->config;
    const Trace& t = state.trace();
    std::vector<int> tokens(static_cast<size_t>(t.logits.rows()), -1);
    tokens[static_cast<size_t>(row)] = LogitLensPanel::chosen_ids(state)[static_cast<size_t>(row)];
    const AttributionMap map =
        attribute_rows(c, state.model()->weights, c.has_encoder() ? t.src.ids : std::vector<int>(),
                       c.has_decoder() ? t.tgt.ids : std::vector<int>(), t.interventions, tokens, method, 32);
    return std::vector<float>(map.values.row(row).data(), map.values.row(row).data() + map.values.cols());
  }
};

// The shipped translator: a bar per source word and per decoder input read so far, each the core's gradient x
// input of the token chosen at the position; the cross-attention bars the last layer's mean over its heads; the map
// a row per prediction and a column per source word, beside the attention map.
TEST_F(WhyApp, TheTranslatorsBarsAreTheCoresAttributionBesideTheLastCrossAttention) {
  start(shipped_model_path("de-en"), "Ein Mann in einem orangefarbenen Hemd steht auf der Straße.");
  app_->set_output_position(3);
  settle();
  const AppState& state = app_->state();
  const Config& c = state.model()->config;
  const int S = static_cast<int>(state.trace().src.ids.size()), position = app_->output_position();
  ASSERT_EQ(position, 3);
  const std::map<int, ItemPlacement> bars = named("why.bar"), attention = named("why.attention");
  ASSERT_EQ(static_cast<int>(bars.size()), S + position + 1) << "the source, then the inputs 0 .. 3";
  const std::vector<float> want = expected_row(position, AttributionMethod::GradientXInput);
  for (int j = 0; j < S + position + 1; ++j) EXPECT_NEAR(bars.at(j).value, want[static_cast<size_t>(j)], 1e-5) << j;
  EXPECT_EQ(bars.at(0).text, state.source_labels()[0]);
  // the cross-attention bars: over the source words only
  ASSERT_EQ(static_cast<int>(attention.size()), S);
  const Mat mean = mean_attention(c, state.trace(), AttentionKind::Cross, c.n_decoder_layers - 1);
  for (int j = 0; j < S; ++j) EXPECT_NEAR(attention.at(j).value, mean(position, j), 1e-5) << j;
  // the maps: every prediction made so far from every source word
  const int rows = static_cast<int>(named("why.map").size()) / S;
  EXPECT_EQ(static_cast<int>(named("why.map").size()), rows * S);
  EXPECT_EQ(named("why.attention_map").size(), named("why.map").size());
  EXPECT_GE(rows, 10);
  EXPECT_LT(named("why.map").at(0).max.x, named("why.attention_map").at(0).min.x) << "side by side";
  // the heading names the token chosen there
  EXPECT_EQ(named("why.heading").at(position).text,
            state.target_token(LogitLensPanel::chosen_ids(state)[static_cast<size_t>(position)]));
}

// An intervention recomputes the view (every head of the last cross-attention off: the attention bars are 0 and the
// attributions change); the method switch gives integrated gradients, with its completeness line, and rollout; a
// click on a row of the map shows that position.
TEST_F(WhyApp, AnInterventionAndTheMethodRecomputeItAndAClickPicksThePosition) {
  start(shipped_model_path("de-en"), "Zwei Hunde spielen im Schnee.");
  app_->set_output_position(2);
  settle();
  const std::map<int, ItemPlacement> before = named("why.bar");
  Interventions iv;
  const Config& c = app_->state().model()->config;
  for (int h = 0; h < c.n_heads; ++h) iv.heads_off.push_back({AttentionKind::Cross, c.n_decoder_layers - 1, h});
  ASSERT_TRUE(app_->set_interventions(iv)) << app_->state().error();
  app_->set_output_position(2);
  settle();
  const std::map<int, ItemPlacement> after = named("why.bar");
  bool changed = false;
  for (const auto& [j, bar] : after)
    if (before.count(j) && std::abs(before.at(j).value - bar.value) > 1e-4f) changed = true;
  EXPECT_TRUE(changed);
  for (const auto& [j, a] : named("why.attention")) EXPECT_EQ(a.value, 0.0f) << j;
  const std::vector<float> want = expected_row(2, AttributionMethod::GradientXInput);
  for (const auto& [j, bar] : after) EXPECT_NEAR(bar.value, want[static_cast<size_t>(j)], 1e-5) << j;

  app_->set_why_method(AttributionMethod::IntegratedGradients);
  settle();
  const std::vector<float> ig = expected_row(2, AttributionMethod::IntegratedGradients);
  for (const auto& [j, bar] : named("why.bar")) EXPECT_NEAR(bar.value, ig[static_cast<size_t>(j)], 1e-5) << j;
  ASSERT_EQ(named("why.completeness").size(), 1u);
  EXPECT_LT(std::abs(named("why.completeness").at(2).value), 0.5f) << "the bars add up to about f(x) - f(0)";

  app_->set_why_method(AttributionMethod::Rollout);
  settle();
  float sum = 0;
  for (const auto& [j, bar] : named("why.bar")) {
    EXPECT_GE(bar.value, 0.0f) << "a share";
    sum += bar.value;
  }
  EXPECT_NEAR(sum, 1.0f, 1e-4f) << "the row's shares: the source and the inputs read (the rest are 0)";
  EXPECT_TRUE(named("why.completeness").empty());

  click(named("why.map").at(1 * static_cast<int>(app_->state().trace().src.ids.size())));
  EXPECT_EQ(app_->output_position(), 1);
}

// A GPT: the words read so far, with its self-attention under them; a BERT's blank: every word of the sentence.
TEST_F(WhyApp, AGptAndABertShowTheirInputsAndSelfAttention) {
  start(shipped_model_path("gpt-en"), "a man in an orange");
  settle();
  {
    const AppState& state = app_->state();
    const int position = app_->output_position();
    EXPECT_EQ(static_cast<int>(named("why.bar").size()), position + 1);
    EXPECT_EQ(named("why.attention").size(), named("why.bar").size());
    const std::vector<float> want = expected_row(position, AttributionMethod::GradientXInput);
    for (const auto& [j, bar] : named("why.bar")) EXPECT_NEAR(bar.value, want[static_cast<size_t>(j)], 1e-5) << j;
    (void)state;
  }
  app_.reset();
  ImGui::DestroyContext();
  start(shipped_model_path("bert-en"), "a man in an orange shirt is standing on the street .");
  ASSERT_TRUE(app_->mutable_state().toggle_mask(6)) << app_->state().error();
  app_->set_output_position(6);
  settle();
  const AppState& state = app_->state();
  const int S = static_cast<int>(state.trace().src.ids.size());
  EXPECT_EQ(static_cast<int>(named("why.bar").size()), S);
  EXPECT_EQ(named("why.heading").at(6).text, "shirt");
  const std::vector<float> want = expected_row(6, AttributionMethod::GradientXInput);
  for (const auto& [j, bar] : named("why.bar")) EXPECT_NEAR(bar.value, want[static_cast<size_t>(j)], 1e-5) << j;
  EXPECT_EQ(static_cast<int>(named("why.map").size()), S * S);
}

TEST(WhyCommands, OutputViewWhyAndTheMethods) {
  std::string error;
  EXPECT_TRUE(parse_script("output-view why\nwhy-method ig\nwhy-method rollout\nwhy-method gxi\n", "test", error)) << error;
  EXPECT_FALSE(parse_script("why-method saliency\n", "test", error));
  EXPECT_NE(error.find("'why-method' takes gxi, ig or rollout, got 'saliency'"), std::string::npos) << error;
}

}  // namespace
}  // namespace sf::gui
