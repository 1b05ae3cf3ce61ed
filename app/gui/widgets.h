// Small widgets shared by every panel.
#pragma once

namespace sf::gui {

// A "(?)" marker whose tooltip carries the explanation of a stage (the plain-language text and the math).
void help_marker(const char* text);

}  // namespace sf::gui

#include <imgui.h>

namespace sf::gui {

// Text drawn rotated by `radians` (counter-clockwise) about `pivot`, its baseline starting at the pivot:
// column labels of heatmaps read bottom to top at pi/2 (screen y points down).
void rotated_text(ImDrawList* draw, ImVec2 pivot, ImU32 colour, const char* text, float radians);

}  // namespace sf::gui
