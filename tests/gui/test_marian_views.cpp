// A Hugging Face Marian folder in the app (headless: no window, no GL): opened as a folder, the sentence split
// into SentencePiece pieces with their word-start mark, the words that became several pieces named, the start
// token <pad>, and the translation the one transformers' greedy decoding gives (the fixture's).
#include <gtest/gtest.h>

#include "backend/backend.h"
#include <imgui.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "headless_imgui.h"
#include "gui/app.h"
#include "gui/render/heatmap.h"
#include "gui/render/item_placements.h"
#include "gui/stages.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "util/parallel.h"

namespace sf::gui {
namespace {

const std::string kFixtures = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/marian";

class MarianViews : public ::testing::Test {
 protected:
  void start(const std::string& sentence, const std::string& stage) {
    testing::start_headless_imgui();
    AppOptions options;
    options.model_path = kFixtures + "/tiny-de-en";
    options.sentence = sentence;
    options.stage = stage;
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
  std::vector<std::string> drawn(const std::string& name) const {
    std::vector<std::string> out;
    for (const ItemPlacement& p : item_placements())
      if (p.name == name) out.push_back(p.text);
    return out;
  }
  std::unique_ptr<App> app_;
};

TEST_F(MarianViews, TheTokensStageShowsThePiecesAndTheTranslationIsTransformersGreedy) {
  const SafetensorsFile plain = SafetensorsFile::open(kFixtures + "/marian_plain.trace.safetensors");
  const std::string sentence = plain.metadata().at("source_text");
  start(sentence, "tokens");
  const AppState& s = app_->state();
  ASSERT_EQ(s.model()->family, "marian");
  // The boxes: the pieces as python3-sentencepiece gives them (▁ included), then </s>.
  std::vector<std::string> expected = nlohmann::json::parse(plain.metadata().at("src_pieces"));
  expected.push_back("</s>");
  EXPECT_EQ(drawn("token.source"), expected);
  // A word of several pieces is named with its pieces.
  const std::vector<std::string> split = drawn("tokens.subword_split");
  ASSERT_EQ(split.size(), 1u);
  EXPECT_NE(split[0].find("H\xc3\xb6hle. = \xe2\x96\x81H + \xc3\xb6 + h + le + ."), std::string::npos) << split[0];
  // The decoder starts from <pad>, and greedy decoding gives transformers' tokens (<pad> never generated).
  ASSERT_FALSE(s.trace().tgt.ids.empty());
  EXPECT_EQ(s.trace().tgt.ids.front(), s.model()->config.pad_id);
  EXPECT_EQ(nlohmann::json(s.translation()), nlohmann::json::parse(plain.metadata().at("greedy")));
  EXPECT_FALSE(s.translation_text().empty());
  EXPECT_EQ(s.translation_text().find("\xe2\x96\x81"), std::string::npos) << s.translation_text();
}

TEST_F(MarianViews, AFolderDroppedOnTheWindowOpens) {
  testing::start_headless_imgui();
  AppOptions options;
  options.sentence = "Ein Hund läuft.";
  app_ = std::make_unique<App>(options);  // the shipped model first
  app_->finish_loading();
  testing::headless_frame(*app_);
  ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  ASSERT_NE(app_->state().model()->family, "marian");
  app_->open_dropped({kFixtures + "/tiny-separate"});
  app_->finish_loading();
  testing::headless_frame(*app_);
  testing::headless_frame(*app_);
  ASSERT_TRUE(app_->state().ready()) << app_->state().error();
  EXPECT_EQ(app_->state().model()->family, "marian");
  EXPECT_FALSE(app_->state().model()->config.share_embeddings);  // its own target vocabulary
  EXPECT_FALSE(app_->state().translation().empty());
}

TEST_F(MarianViews, TheTopBarSaysWhichDeviceComputes) {
  // The views compute on the GPU where there is one (--device auto, the default), else on the CPU, and the top
  // bar says which.
  start("Ein Hund läuft.", "tokens");
  const std::vector<std::string> device = drawn("top_bar.device");
  ASSERT_EQ(device.size(), 1u);
  EXPECT_EQ(device[0], backend_info().cuda_available ? "GPU " + backend_info().cuda_device_name
                                                     : "CPU, " + std::to_string(parallel_threads()) + " threads");
}

// Every stage opened on a Marian model (its own vocabulary sizes, <pad> as the decoder's start): the stage asked
// for is the one on screen, and its main picture is drawn with the model's own sizes (the source's and the
// translation's tokens), not an empty or stale one.
TEST_F(MarianViews, EveryStageDrawsOnIt) {
  struct Expected {
    const char* stage;
    const char* main_map;  // the main picture's kind ("" where the stage has none of that kind)
    char attention;        // 'e' encoder self-attention, 'd' decoder self-attention, 'c' cross-attention, 0 none
  };
  const Expected stages[] = {
      {"embedding", "", 0},                   {"positional", "positional", 0},
      {"encoder-qkv", "", 0},                 {"encoder-attention", "attention", 'e'},
      {"concat-heads", "concat", 0},          {"encoder-add-norm", "add_norm", 0},
      {"encoder-feed-forward", "feed_forward", 0}, {"decoder-attention", "attention", 'd'},
      {"cross-attention", "attention", 'c'},  {"decoder-add-norm", "add_norm", 0},
      {"decoder-feed-forward", "feed_forward", 0}, {"all-heads", "all_heads", 0},
      {"output", "", 0},                      {"decoding", "", 0},
      {"interventions", "", 0}};
  for (const Expected& e : stages) {
    SCOPED_TRACE(e.stage);
    ASSERT_NO_FATAL_FAILURE(start("Zwei Hunde spielen im Schnee.", e.stage));
    const AppState& s = app_->state();
    EXPECT_TRUE(s.error().empty()) << s.error();
    EXPECT_EQ(std::string(stage_name(app_->stage())), e.stage) << "the stage asked for is the one on screen";
    const int source = static_cast<int>(s.trace().src.ids.size()), target = static_cast<int>(s.trace().tgt.ids.size());
    ASSERT_GT(source, 3);
    ASSERT_GT(target, 2);
    if (*e.main_map) {
      EXPECT_EQ(drawn("main_map"), std::vector<std::string>{e.main_map});
    }
    // The embedding and Q/K/V stages name their main picture in presentation mode only; their maps have a row
    // per source token.
    const auto rows_of = [](const std::string& name) {
      for (const HeatmapPlacement& p : heatmap_placements())
        if (p.name == name) return p.rows;
      return -1;
    };
    if (std::string(e.stage) == "embedding") {
      EXPECT_EQ(rows_of("embedding"), source);
    }
    if (std::string(e.stage) == "encoder-qkv") {
      EXPECT_EQ(rows_of("qkv_input"), source);
    }
    if (e.attention) {
      int rows = -1, cols = -1;
      for (const HeatmapPlacement& p : heatmap_placements())
        if (p.name == "attention") rows = p.rows, cols = p.cols;
      EXPECT_EQ(rows, e.attention == 'e' ? source : target);
      EXPECT_EQ(cols, e.attention == 'd' ? target : source);
    }
    if (std::string(e.stage) == "output") {
      const std::vector<std::string> chosen = drawn("output_bar.chosen");
      ASSERT_EQ(chosen.size(), 1u);
      const size_t position = static_cast<size_t>(app_->output_position());
      ASSERT_LT(position, s.translation().size());
      EXPECT_EQ(chosen[0], s.target_token(s.translation()[position])) << "the chosen token of the position on show";
    }
    if (std::string(e.stage) == "decoding") {
      EXPECT_EQ(drawn("timeline.token").size(), s.translation().size()) << "one box per generated token";
    }
    app_.reset();
    ImGui::DestroyContext();
  }
}

}  // namespace
}  // namespace sf::gui
