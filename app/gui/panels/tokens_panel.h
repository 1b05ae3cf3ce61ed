// A decoder-only model (GPT): its prompt after <bos> instead of a source, every position's input over the token
// after it (the prompt's own next, given; then what it wrote), and the pictures of its one stack.
// Panel: the story of the sentence at a glance, the first screen a class sees. The sentence as the model reads
// it (tokens and ids, <unk> and special tokens marked), the decoder's input (the translation shifted right
// after <bos>) over what each position wrote, and a small live picture of every stage along the pipeline, in
// its order: a click on one opens that stage.
#pragma once
#include <optional>

#include "gui/app_state.h"
#include "gui/panels/panel.h"
#include "gui/render/heatmap.h"
#include "gui/stages.h"

namespace sf::gui {

class TokensPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;

 private:
  // Returns the stage whose picture was clicked, if any; a token clicked to mask it (an encoder-only model's
  // sentence): its position in *mask_clicked.
  std::optional<Stage> draw_stage(const AppState& state, std::optional<int>* mask_clicked = nullptr);
  // An encoder-only model's sentence ([CLS] ... [SEP]) read whole: each token over the likeliest word at its
  // position; a click on a token masks it (or brings its word back). Returns the position clicked.
  std::optional<int> draw_whole_sentence(const AppState& state);
  // The small live picture of every stage along the model's path; returns the one clicked.
  std::optional<Stage> draw_thumbnails(const AppState& state);
  void draw_source(const AppState& state, bool subwords);  // a translator's source, as the model reads it
  static constexpr int kThumbnails = 9;
  Heatmap thumbnails_[kThumbnails];
  Mat output_top_;  // (T, 10): each position's ten largest probabilities, largest first (the output's picture)
  int uploaded_version_ = -1;
  int uploaded_count_ = 0;  // the pictures uploaded: a translator's nine, a decoder-only model's seven
};

}  // namespace sf::gui
