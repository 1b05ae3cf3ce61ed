// Panel: the logit lens (core/explain/logit_lens.h), on the output stage beside the probabilities: what the
// model would predict if it stopped after each layer of its last stack. A layers x positions grid (the output on
// top, layer 1 at the bottom, as the pipeline map stacks them): each cell the likeliest token there and its
// probability, its colour the probability (viridis, 0 to 1); hover a cell for its five likeliest. Under it, for
// the position on show, the probability of the token the model finally chose there, layer by layer: where the
// answer forms on the way up the residual stream. Computed off the frame thread from the trace on show, again
// whenever the trace changes (a new sentence, an intervention, a step).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "explain/logit_lens.h"
#include "gui/app_state.h"
#include "gui/background_task.h"

namespace sf::gui {

class LogitLensPanel {
 public:
  // `position`: the row on show (the output stage's position: a decoder position, or a sentence position of an
  // encoder-only model); a click on a column asks for it (returned).
  std::optional<int> draw(const AppState& state, int position);

  // The token id each row of the shown trace finally chose (or was given): a decoder row's next token (the
  // prompt's own, or the one generated there), an encoder-only model's likeliest at each position; -1 for none.
  static std::vector<int> chosen_ids(const AppState& state);

 private:
  void start_if_stale(const AppState& state);
  // The type's scale for the next frame, from the height (used) this one took of the room it had at `scale`.
  void fit_to(float room, float used, float scale);
  float fit_scale_ = 1.0f;
  BackgroundTask<LogitLensTop> task_;
  std::optional<LogitLensTop> top_;
  std::uint64_t computed_version_ = 0, asked_version_ = 0;
  bool asked_ = false;
  std::vector<int> chosen_;  // of the version computed
};

}  // namespace sf::gui
