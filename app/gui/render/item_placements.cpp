#include "gui/render/item_placements.h"

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

}  // namespace sf::gui
