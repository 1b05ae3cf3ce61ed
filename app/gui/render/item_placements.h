// Where panels drew the things a test or a lesson checks that are not heatmaps (token boxes, probability bars,
// strips, step maps): a name, a rectangle in framebuffer pixels, and what it shows. Filled during a frame,
// forgotten when the next one starts (App::frame calls begin_item_frame), dumped into the layout JSON
// (--layout-json, the script's `layout`) for the screenshot tests.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

namespace sf::gui {

struct ItemPlacement {
  std::string name;   // what kind of thing: "token.source", "token.target", "output_bar", ...
  ImVec2 min{0, 0}, max{0, 0};
  int index = -1;     // which one of its kind (token position, candidate rank), -1 when there is one
  std::string text;   // the text it shows, if any
  float value = 0;    // the number it shows, if any (a probability for a bar)
};

// Records an item drawn at [min, max) in ImGui's screen units (converted to framebuffer pixels here).
void record_item(const std::string& name, ImVec2 min, ImVec2 max, int index = -1, const std::string& text = {},
                 float value = 0);
const std::vector<ItemPlacement>& item_placements();
void begin_item_frame();
// Whether the last frame drew an item named "*.computing": a view still computing off the frame thread (the logit
// lens, the attributions), which a script waits for before its next command.
bool a_view_is_computing();
// Inside a child window, before EndChild: records "scroll_region" named `name`, its visible rectangle, and in
// `value` how many pixels its content runs past its bottom (0 when it all shows): for the screen tests that want
// every part a lesson's caption names in view.
void record_scroll_region(const std::string& name);

}  // namespace sf::gui
