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
#include "model/sentencepiece.h"
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
  // The words that are several pieces, each as its pieces' letters (lower case, no ▁): independently of the
  // panel's scan for ▁, from the model's own SentencePiece split of each word.
  static std::vector<std::string> split_words(const Model& model, const std::vector<std::string>& words, Side side) {
    std::vector<std::string> out;
    for (const std::string& w : words) {
      const std::vector<Piece> pieces = model.sentencepiece->split(w, side);
      if (pieces.size() < 2) continue;
      std::string letters;
      for (const Piece& p : pieces) letters += p.piece.starts_with(kMark) ? p.piece.substr(kMark.size()) : p.piece;
      out.push_back(letters);
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
  std::vector<std::string> boxes;
  for (const Token& t : tokens) boxes.push_back(t.text);
  EXPECT_EQ(drawn("token.source"), boxes);
  // "Zylinderhut" and "Flamingo" are several pieces each: a bracket under each such word, named by its letters.
  std::vector<std::string> words;
  for (const std::string& w : subword_words(*s.model(), [&] {
         std::vector<std::string> p;
         for (const Token& t : tokens) p.push_back(t.text);
         return p;
       }(), Side::Source))
    words.push_back(w);
  const std::vector<std::string> brackets = split_words(*s.model(), words, Side::Source);
  EXPECT_EQ(drawn("tokens.word_bracket"), brackets);
  EXPECT_NE(std::find(brackets.begin(), brackets.end(), "zylinderhut"), brackets.end());
  EXPECT_NE(std::find(brackets.begin(), brackets.end(), "flamingo"), brackets.end());
  // The translation's words of several pieces, bracketed the same way: a word the model wrote is its pieces from
  // one that starts with ▁ up to the next (it may write a word in other pieces than SentencePiece would split it).
  std::vector<std::vector<std::string>> written_words;
  for (int id : s.translation()) {
    if (id == s.model()->config.eos_id) continue;
    const std::string piece = s.model()->tgt_vocab.token(id);
    if (piece.starts_with(kMark) || written_words.empty()) written_words.emplace_back();
    written_words.back().push_back(piece);
  }
  std::vector<std::string> expected;
  for (const std::vector<std::string>& pieces : written_words) {
    if (pieces.size() < 2) continue;
    std::string letters;
    for (const std::string& p : pieces) letters += p.starts_with(kMark) ? p.substr(kMark.size()) : p;
    expected.push_back(letters);
  }
  EXPECT_EQ(drawn("tokens.target_word_bracket"), expected);
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
