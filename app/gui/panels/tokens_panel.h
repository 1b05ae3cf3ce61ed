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
  // Returns the stage whose picture was clicked, if any.
  std::optional<Stage> draw_stage(const AppState& state);
  static constexpr int kThumbnails = 9;
  Heatmap thumbnails_[kThumbnails];
  Mat output_top_;  // (T, 10): each position's ten largest probabilities, largest first (the output's picture)
  int uploaded_version_ = -1;
};

}  // namespace sf::gui
