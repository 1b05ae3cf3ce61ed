// The attention stage as a user sees it: the app run under xvfb-run -a on a model file, its screenshot read
// back. Checked against the trace that the core computes for the same model and sentence: in every row of
// the heatmap the brightest cell is where the trace has that row's largest probability, and cells the mask
// blocks are drawn hatched grey, not in a colormap colour. The shipped model on the default sentence, and heads
// whose every row has one clear maximum (at least 0.03 above the next cell, about 8 of the colormap's 256
// steps), so that only the right cell can be the brightest.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "app_under_xvfb.h"
#include "gui/app_state.h"
#include "gui/panels/attention_panel.h"
#include "gui/panels/interventions_panel.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors";
const std::string kSentence = kDefaultSentence;
constexpr float kClearMaximum = 0.03f;  // a row's maximum over its second-largest cell

struct Screen : testing::Image {
  nlohmann::json heatmap;
  // The pixel at the centre of cell (row, col).
  const unsigned char* cell(int row, int col) const {
    const float x0 = heatmap["x0"], y0 = heatmap["y0"], x1 = heatmap["x1"], y1 = heatmap["y1"];
    const int rows = heatmap["rows"], cols = heatmap["cols"];
    return at(static_cast<int>(x0 + (col + 0.5f) * (x1 - x0) / cols), static_cast<int>(y0 + (row + 0.5f) * (y1 - y0) / rows));
  }
};

// Runs the app on a script: the model and sentence, `setup` (interventions), then the head, a screenshot and
// the layout of the heatmaps.
Screen screenshot(const std::string& attention, const std::string& name, const std::string& setup) {
  fs::create_directories(STEPFORMER_TEST_OUTPUT_DIR);
  const std::string base = std::string(STEPFORMER_TEST_OUTPUT_DIR) + "/" + name;
  const std::string png = base + ".png", layout = base + ".json", script = base + ".script";
  {
    std::ofstream out(script);
    out << "unhover\nmodel " << kModel << "\nsentence " << kSentence << "\n" << setup << "attention " << attention
        << "\nscreenshot " << png << "\nlayout " << layout << "\nquit\n";
  }
  const std::string cmd = testing::headless_app_command("--no-settings --size 1280x800 --script " + script + " > " +
                                                        base + ".log 2>&1");
  Screen s;
  if (std::system(cmd.c_str()) != 0) return s;
  static_cast<testing::Image&>(s) = testing::load_png(png);
  const nlohmann::json j = testing::load_json(layout);
  for (const auto& h : j["heatmaps"])
    if (h["name"] == "attention") s.heatmap = h;
  return s;
}

float luma(const unsigned char* p) { return 0.2126f * p[0] + 0.7152f * p[1] + 0.0722f * p[2]; }

// `setup`: script lines applied in the app, `apply`: the same change made to the state here.
void check_head(const std::string& ref, const std::string& setup = "",
                const std::function<void(AppState&)>& apply = {}, int expected_hatched = -1) {
  AppState state;
  ASSERT_TRUE(state.load_model(kModel)) << state.error();
  ASSERT_TRUE(state.set_sentence(kSentence)) << state.error();
  if (apply) apply(state);
  const HeadRef h = parse_head_ref(ref);
  const AttentionTrace* a = selected_attention(state.trace(), {h.kind, h.layer, h.head});
  ASSERT_NE(a, nullptr);
  const Mat& probs = a->probs[h.head];
  const Mat blocked = a->mask_matrix(static_cast<size_t>(h.head));

  const Screen s = screenshot(ref, "attention_" + ref + (setup.empty() ? "" : "_changed"), setup);
  ASSERT_TRUE(s.pixels) << "the app did not write a screenshot";
  ASSERT_FALSE(s.heatmap.is_null()) << "no attention heatmap on screen";
  ASSERT_EQ(s.heatmap["rows"], probs.rows());
  ASSERT_EQ(s.heatmap["cols"], probs.cols());
  int hatched = 0;
  for (Eigen::Index i = 0; i < probs.rows(); ++i) {
    Eigen::Index want = 0;
    const float top = probs.row(i).maxCoeff(&want);
    float second = 0;
    for (Eigen::Index j = 0; j < probs.cols(); ++j)
      if (j != want) second = std::max(second, probs(i, j));
    ASSERT_GE(top - second, kClearMaximum) << ref << " row " << i << " has no clear maximum: pick another head";
    Eigen::Index brightest = -1;
    float best = -1;
    for (Eigen::Index j = 0; j < probs.cols(); ++j) {
      const unsigned char* p = s.cell(static_cast<int>(i), static_cast<int>(j));
      const bool grey = std::abs(p[0] - p[1]) < 6 && std::abs(p[1] - p[2]) < 6;
      if (blocked.size() && blocked(i, j) > 0.5f) {
        EXPECT_TRUE(grey) << ref << ": blocked cell (" << i << ", " << j << ") is not drawn hatched grey";
        ++hatched;
        continue;
      }
      EXPECT_FALSE(grey) << ref << ": allowed cell (" << i << ", " << j << ") is drawn grey";
      if (luma(p) > best) best = luma(p), brightest = j;
    }
    EXPECT_EQ(brightest, want) << ref << " row " << i << ": brightest cell " << brightest << " (p "
                               << probs(i, brightest) << "), trace maximum at " << want << " (p " << top << ")";
  }
  if (expected_hatched >= 0) {
    EXPECT_EQ(hatched, expected_hatched);
  } else if (h.kind == AttentionKind::Decoder) {
    EXPECT_GT(hatched, 0) << "the causal mask blocks the cells above the diagonal";
  }
}

TEST(AttentionScreen, EncoderHeadBrightestCellsMatchTheTrace) { check_head("enc.2.3"); }
TEST(AttentionScreen, DecoderHeadShowsTheCausalMaskHatched) { check_head("dec.2.4"); }
TEST(AttentionScreen, CrossHeadBrightestCellsMatchTheTrace) { check_head("cross.3.3"); }

TEST(AttentionScreen, CausalMaskOffShowsNoBlockedCells) {
  check_head("dec.2.4", "causal-mask off\n", [](AppState& state) {
    Interventions iv = state.interventions();
    iv.causal_mask = false;
    ASSERT_TRUE(state.set_interventions(iv)) << state.error();
  }, 0);
}

TEST(AttentionScreen, PaintedCellsAreDrawnBlocked) {
  // Two cells painted by the script's `mask` (as clicks in "paint mask"): exactly those two are hatched.
  check_head("enc.2.3", "mask enc.2.3 3 0\nmask enc.2.3 4 5\n", [](AppState& state) {
    Interventions iv = state.interventions();
    ASSERT_TRUE(toggle_mask_cell(state.trace(), iv, {AttentionKind::Encoder, 1, 2}, 3, 0));
    ASSERT_TRUE(toggle_mask_cell(state.trace(), iv, {AttentionKind::Encoder, 1, 2}, 4, 5));
    ASSERT_TRUE(state.set_interventions(iv)) << state.error();
    // Row is the query, column the key: (3, 0) and (4, 5) are blocked, their mirror cells are not.
    const Mat blocked = state.trace().encoder[1].self_attn.mask_matrix(2);
    for (Eigen::Index i = 0; i < blocked.rows(); ++i)
      for (Eigen::Index j = 0; j < blocked.cols(); ++j)
        EXPECT_EQ(state.trace().encoder[1].self_attn.blocked(2, i, j), blocked(i, j) > 0.5f) << i << ", " << j;
    EXPECT_GT(blocked(3, 0), 0.5f);
    EXPECT_GT(blocked(4, 5), 0.5f);
    EXPECT_LT(blocked(0, 3), 0.5f);
    EXPECT_LT(blocked(5, 4), 0.5f);
    EXPECT_EQ(blocked.sum(), 2.0f);
  }, 2);
}

TEST(AppState, BadModelKeepsTheCurrentOneAndNamesTheProblem) {
  AppState state;
  ASSERT_TRUE(state.load_model(kModel));
  ASSERT_TRUE(state.set_sentence(kSentence));
  const int version = state.version();
  EXPECT_FALSE(state.load_model("/nonexistent/model.safetensors"));
  EXPECT_NE(state.error().find("nonexistent"), std::string::npos) << state.error();
  EXPECT_EQ(state.model_path(), kModel);
  EXPECT_EQ(state.version(), version);
  EXPECT_TRUE(state.ready());
  EXPECT_FALSE(state.set_sentence("   "));
  EXPECT_NE(state.error().find("the sentence is blank"), std::string::npos) << state.error();
  EXPECT_EQ(state.sentence(), kSentence);
}

}  // namespace
}  // namespace sf::gui
