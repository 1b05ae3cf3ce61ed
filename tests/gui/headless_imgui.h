// Dear ImGui without a window or GL, for the panel tests: the app's own headless set-up
// (gui/headless_imgui.h), and one frame of the app as the main loop runs it.
#pragma once
#include <imgui.h>

#include <optional>
#include <string>

#include "gui/headless_imgui.h"
#include "gui/render/heatmap.h"

namespace sf::gui::testing {

using ::sf::gui::start_headless_imgui;

// One frame of `app` (gui::App) as the main loop runs it, with the GLFW key `key` held down during it (-1:
// none) and, if given, the mouse at `mouse`.
template <typename App>
void headless_frame(App& app, int key = -1, std::optional<ImVec2> mouse = std::nullopt) {
  ImGuiIO& io = ImGui::GetIO();
  for (bool& down : io.KeysDown) down = false;
  if (key >= 0) io.KeysDown[key] = true;
  if (mouse) io.MousePos = *mouse;
  ImGui::NewFrame();
  app.frame();
  ImGui::Render();
}

// The heatmap a panel drew under `name` in the last frame (heatmap_placements), or nullptr.
inline const Heatmap* drawn_heatmap(const std::string& name) {
  for (const auto& p : heatmap_placements())
    if (p.name == name) return p.heatmap;
  return nullptr;
}

}  // namespace sf::gui::testing
