// Dear ImGui without a window or GL, for the panel tests: a context with a display size and a frame time, no
// .ini file, and (unless the test builds its own fonts) ImGui's built-in font in a built atlas.
#pragma once
#include <imgui.h>

#include <optional>

namespace sf::gui::testing {

inline void start_headless_imgui(bool default_font = true, ImVec2 display = ImVec2(1280, 800)) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = display;
  io.DeltaTime = 1.0f / 60.0f;
  if (!default_font) return;
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->AddFontDefault();
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
}

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

}  // namespace sf::gui::testing
