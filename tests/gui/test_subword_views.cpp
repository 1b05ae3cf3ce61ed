// The default model, the subword translator (de-en-bpe, issue #54), in the app (headless: no window, no GL): the
// tokens stage shows the pieces the core reads, a bracket under the pieces of each word made of several (the
// source's and the written translation's), and the presenting strip shows the words the pieces make, never a ▁.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include <imgui.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "headless_imgui.h"
#include "gui/app.h"
#include "gui/render/item_placements.h"
#include "gui/words.h"
#include "model/model.h"
#include "model/tokenizer.h"

namespace sf::gui {
namespace {

const std::string kMark = "\xe2\x96\x81";  // ▁: a piece that starts a word
const std::string kSentence = "Ein Mann mit einem Zylinderhut fotografiert einen Flamingo im Zoo.";

class SubwordViews : public ::testing::Test {
 protected:
  void start(bool present) {
    testing::start_headless_imgui();
    AppOptions options;  // no model named: the default
    options.sentence = kSentence;
    options.stage = "tokens";
    options.present = present;
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
  // The words of several pieces in `pieces` ("" for a special token), each as its pieces joined without ▁.
  static std::vector<std::string> split_words(const std::vector<std::string>& pieces) {
    std::vector<std::string> out;
    for (size_t i = 0; i < pieces.size();) {
      size_t end = i + 1;
      while (end < pieces.size() && !pieces[end].empty() && !pieces[end].starts_with(kMark)) ++end;
      if (end - i > 1 && !pieces[i].empty()) {
        std::string word;
        for (size_t k = i; k < end; ++k) word += pieces[k].starts_with(kMark) ? pieces[k].substr(kMark.size()) : pieces[k];
        out.push_back(word);
      }
      i = end;
    }
    return out;
  }
  std::unique_ptr<App> app_;
};

TEST_F(SubwordViews, TheTokensStageBracketsThePiecesOfEachWord) {
  start(false);
  const AppState& s = app_->state();
  ASSERT_EQ(s.model()->tokenizer.kind, "words_bpe") << "the default model is the subword translator";
  // The boxes: the core's pieces of the sentence.
  const std::vector<Token> tokens = encode_text(*s.model(), kSentence, Side::Source);
  std::vector<std::string> pieces, boxes;
  for (const Token& t : tokens) {
    pieces.push_back(t.special ? std::string() : t.text);
    boxes.push_back(t.text);
  }
  EXPECT_EQ(drawn("token.source"), boxes);
  // "Zylinderhut" and "Flamingo" are several pieces each: a bracket under each such word, named by its letters.
  const std::vector<std::string> words = split_words(pieces);
  EXPECT_EQ(drawn("tokens.word_bracket"), words);
  EXPECT_NE(std::find(words.begin(), words.end(), "zylinderhut"), words.end());
  EXPECT_NE(std::find(words.begin(), words.end(), "flamingo"), words.end());
  // The translation's words of several pieces, bracketed the same way.
  std::vector<std::string> written;
  for (int id : s.translation()) written.push_back(id == s.model()->config.eos_id ? "" : s.model()->tgt_vocab.token(id));
  EXPECT_EQ(drawn("tokens.target_word_bracket"), split_words(written));
}

TEST_F(SubwordViews, ThePresentingStripShowsTheWordsThePiecesMake) {
  start(true);
  const AppState& s = app_->state();
  std::vector<std::string> pieces;
  for (int id : s.translation())
    if (id != s.model()->config.eos_id) pieces.push_back(s.model()->tgt_vocab.token(id));
  std::vector<std::string> words;
  for (const std::string& w : subword_words(*s.model(), pieces, Side::Target)) words.push_back(unescape_token(w));
  ASSERT_FALSE(words.empty());
  const std::vector<std::string> strip = drawn("strip.translation");
  EXPECT_EQ(strip, words);
  for (const std::string& w : strip) EXPECT_EQ(w.find(kMark), std::string::npos) << w;
  EXPECT_LT(strip.size(), pieces.size()) << "some word of this translation is several pieces";
}

}  // namespace
}  // namespace sf::gui
