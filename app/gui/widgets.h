// Small widgets shared by every panel.
#pragma once

namespace sf::gui {

// A "(?)" marker whose tooltip carries the explanation of a stage (the plain-language text and the math).
void help_marker(const char* text);

}  // namespace sf::gui
