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
#include "gui/render/item_placements.h"
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
    ASSERT_TRUE(app_->state().ready()) << app_->state().error;
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
  ASSERT_EQ(s.model->family, "marian");
  // The boxes: the pieces as python3-sentencepiece gives them (▁ included), then </s>.
  std::vector<std::string> expected = nlohmann::json::parse(plain.metadata().at("src_pieces"));
  expected.push_back("</s>");
  EXPECT_EQ(drawn("token.source"), expected);
  // A word of several pieces is named with its pieces.
  const std::vector<std::string> split = drawn("tokens.subword_split");
  ASSERT_EQ(split.size(), 1u);
  EXPECT_NE(split[0].find("H\xc3\xb6hle. = \xe2\x96\x81H + \xc3\xb6 + h + le + ."), std::string::npos) << split[0];
  // The decoder starts from <pad>, and greedy decoding gives transformers' tokens (<pad> never generated).
  ASSERT_FALSE(s.trace.tgt.ids.empty());
  EXPECT_EQ(s.trace.tgt.ids.front(), s.model->config.pad_id);
  EXPECT_EQ(nlohmann::json(s.translation), nlohmann::json::parse(plain.metadata().at("greedy")));
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
  ASSERT_TRUE(app_->state().ready()) << app_->state().error;
  ASSERT_NE(app_->state().model->family, "marian");
  app_->open_dropped({kFixtures + "/tiny-separate"});
  app_->finish_loading();
  testing::headless_frame(*app_);
  testing::headless_frame(*app_);
  ASSERT_TRUE(app_->state().ready()) << app_->state().error;
  EXPECT_EQ(app_->state().model->family, "marian");
  EXPECT_FALSE(app_->state().model->config.share_embeddings);  // its own target vocabulary
  EXPECT_FALSE(app_->state().translation.empty());
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

TEST_F(MarianViews, EveryStageDrawsOnIt) {
  for (const char* stage : {"embedding", "positional", "encoder-qkv", "encoder-attention", "concat-heads",
                            "encoder-add-norm", "encoder-feed-forward", "decoder-attention", "cross-attention",
                            "decoder-add-norm", "decoder-feed-forward", "all-heads", "output", "decoding",
                            "interventions"}) {
    ASSERT_NO_FATAL_FAILURE(start("Zwei Hunde spielen im Schnee.", stage)) << stage;
    EXPECT_TRUE(app_->state().error.empty()) << stage << ": " << app_->state().error;
    app_.reset();
    ImGui::DestroyContext();
  }
}

}  // namespace
}  // namespace sf::gui
