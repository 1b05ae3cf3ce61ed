// Panel: the sinusoidal positional encoding as a (positions x dimensions) heatmap, with its formula.
#pragma once
#include "gui/render/heatmap.h"
#include "util/tensor.h"

namespace sf::gui {

class PositionalEncodingPanel {
 public:
  void draw(int d_model, int positions);

 private:
  Heatmap heatmap_;
  Mat encoding_;  // (positions, C), recomputed only when the size changes
};

}  // namespace sf::gui
