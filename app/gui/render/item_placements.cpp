#include "gui/render/item_placements.h"

#include <imgui_internal.h>  // the window's CursorMaxPos: how far its content reached

#include <algorithm>

namespace sf::gui {

namespace {
std::vector<ItemPlacement>& placements() {
  static std::vector<ItemPlacement> items;
  return items;
}
}  // namespace

void record_item(const std::string& name, ImVec2 min, ImVec2 max, int index, const std::string& text, float value) {
  const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
  placements().push_back({name, ImVec2(min.x * scale.x, min.y * scale.y), ImVec2(max.x * scale.x, max.y * scale.y),
                          index, text, value});
}

const std::vector<ItemPlacement>& item_placements() { return placements(); }

void begin_item_frame() { placements().clear(); }

bool a_view_is_computing() {
  for (const ItemPlacement& p : placements())
    if (p.name.ends_with(".computing")) return true;
  return false;
}

}  // namespace sf::gui

namespace sf::gui {

void record_scroll_region(const std::string& name) {
  const ImVec2 pos = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
  // The content's bottom as laid out from the top (scrolling moves it up), against the window's bottom.
  const float bottom = ImGui::GetCurrentWindow()->DC.CursorMaxPos.y + ImGui::GetScrollY();
  record_item("scroll_region", pos, ImVec2(pos.x + size.x, pos.y + size.y), -1, name,
              std::max(0.0f, bottom - (pos.y + size.y)));
}

}  // namespace sf::gui
