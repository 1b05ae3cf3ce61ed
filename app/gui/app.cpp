#include "gui/app.h"

#include <imgui.h>

#include "backend/backend.h"
#include "gui/render/heatmap.h"

namespace sf::gui {

App::App(const AppOptions& options) : options_(options) {}

void App::frame() {
  heatmap_placements().clear();
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(viewport->WorkSize);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
  ImGui::Begin("Stepformer", nullptr, flags);
  ImGui::Text("Stepformer %s", STEPFORMER_VERSION);
  ImGui::SameLine();
  ImGui::TextDisabled("  %s", backend_info().description.c_str());
  ImGui::Separator();

  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  ImGui::SliderInt("positions", &positions_, 4, 256);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  if (ImGui::InputInt("d_model", &d_model_, 2, 32)) d_model_ = std::clamp(d_model_ + d_model_ % 2, 2, 1024);
  positional_panel_.draw(d_model_, positions_);
  ImGui::End();
}

}  // namespace sf::gui
