#include "gui/widgets.h"

#include <imgui.h>

namespace sf::gui {

void help_marker(const char* text) {
  ImGui::SameLine();
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

}  // namespace sf::gui

#include <cmath>

namespace sf::gui {

void rotated_text(ImDrawList* draw, ImVec2 pivot, ImU32 colour, const char* text, float radians) {
  // Draw unrotated at the pivot, then rotate the new vertices about it (ImGui 1.86 has no rotated text).
  const int first = draw->VtxBuffer.Size;
  draw->AddText(pivot, colour, text);
  const float c = std::cos(radians), s = std::sin(radians);
  for (int i = first; i < draw->VtxBuffer.Size; ++i) {
    ImVec2& p = draw->VtxBuffer[i].pos;
    const float x = p.x - pivot.x, y = p.y - pivot.y;
    p = ImVec2(pivot.x + c * x + s * y, pivot.y - s * x + c * y);
  }
}

}  // namespace sf::gui
