// The top bar's "View" button: presentation mode, full screen and the UI scale.
#pragma once
#include "gui/view.h"

namespace sf::gui {

class ViewPopup {
 public:
  // Draws the button and its popup; changes `view` when the user does (the app applies it between frames).
  void draw(ViewSettings* view);

 private:
  float scale_ = 1.0f;  // the slider while it is dragged: fonts are rebuilt when it is let go
};

}  // namespace sf::gui
