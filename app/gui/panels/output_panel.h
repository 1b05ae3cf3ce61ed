// Panel: the output layer. For one decoder position: logits = dec.out W^T + b over the whole target
// vocabulary, softmax, the most likely tokens as probability bars, and the token decoding chose. Clicking a
// candidate asks to force it at that position.
#pragma once
#include "gui/app_state.h"
#include "gui/panels/attribution_panel.h"
#include "gui/panels/fill_blank_panel.h"
#include "gui/panels/logit_lens_panel.h"
#include "gui/panels/panel.h"

namespace sf::gui {

// The output stage's views: the probabilities at a position (the bars; fill in the blank for an encoder-only
// model), every layer's guess (the logit lens), or why this word (attribution beside attention).
enum class OutputView { Probabilities, Lens, Why };

// The bars are the distribution the token at `position` was chosen from (AppState::chosen_distribution_logits),
// however the model was changed; where the last full pass's row differs (the causal mask off), a switch shows
// that row instead, and says what it is.
class OutputPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;
  void set_view(OutputView view) { view_ = view; }  // (also the script's output-view)
  OutputView view() const { return view_; }
  void set_why_method(AttributionMethod method) { why_.set_method(method); }  // (the script's why-method)
  void set_why_part(WhyPart part) { why_.set_part(part); }                    // (the script's why-part)

 private:
  // Returns true with *forced_token set when the user clicked a candidate for output `position`.
  bool draw_stage(const AppState& state, int& position, int* forced_token);
  bool show_last_pass_ = false;
  // The switch between the views, on top of both; true when it changed.
  bool draw_view_switch();
  FillBlankPanel fill_blank_;  // an encoder-only model's output: fill in the blank
  LogitLensPanel lens_;
  AttributionPanel why_;
  OutputView view_ = OutputView::Probabilities;
};

}  // namespace sf::gui
