#include "gui/panels/view_popup.h"

#include <imgui.h>

namespace sf::gui {

void ViewPopup::draw(ViewSettings* view) {
  if (ImGui::Button("View...")) {
    scale_ = view->ui_scale;
    ImGui::OpenPopup("view");
  }
  if (!ImGui::BeginPopup("view")) return;
  // Presentation mode hides the top bar and with it this popup's button: close it.
  if (ImGui::Checkbox("Presentation mode (F5)", &view->present)) ImGui::CloseCurrentPopup();
  ImGui::Checkbox("Full screen (F11)", &view->fullscreen);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  ImGui::SliderFloat("UI scale", &scale_, 0.75f, 3.0f, "%.2f");
  // Rebuilding the fonts while the slider is dragged would resize the slider under the pointer.
  if (ImGui::IsItemDeactivatedAfterEdit()) view->ui_scale = scale_;
  ImGui::TextDisabled("fonts are drawn at %.0f px%s", ImGui::GetFontSize(),
                      view->present ? " (presentation mode: at most 1/25 of the window's height)" : "");
  ImGui::EndPopup();
}

}  // namespace sf::gui
