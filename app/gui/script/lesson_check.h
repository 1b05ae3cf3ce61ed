// `stepformer --check-lesson FILE [--model PATH]`: a lesson replayed without a window, before a class sees it.
// Every line at fault is listed with its line number; then the lesson runs on the model (headless Dear ImGui,
// the app's real frames) without stopping at its pauses, and each pause is printed with the stage it shows,
// its caption and what was skipped before it (a head or layer the model does not have, a bad line). Nothing
// is written: screenshots and exports the lesson asks for are named, not made.
#pragma once
#include <cstdio>

#include "gui/options.h"

namespace sf::gui {

// Prints the report to `out`; returns 0 when the lesson plays without a problem, 1 when it has any, 2 when it
// cannot be read at all.
int check_lesson(const AppOptions& options, std::FILE* out);

}  // namespace sf::gui
