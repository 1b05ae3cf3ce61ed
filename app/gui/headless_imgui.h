// Dear ImGui without a window or GL: a context with a display size and a frame time, no .ini file, and (unless
// the caller builds its own fonts) ImGui's built-in font in a built atlas. The panels lay out as they would and
// nothing is drawn: for --check-lesson (gui/script/lesson_check.cpp) and the panel tests.
#pragma once
#include <imgui.h>

namespace sf::gui {

inline void start_headless_imgui(bool default_font = true, ImVec2 display = ImVec2(1280, 800)) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = display;
  io.DeltaTime = 1.0f / 60.0f;
  // As the OpenGL 3.3 backend does: a draw list past 65536 vertices (a beam of 64 over a long sentence) is
  // split into commands with a vertex offset instead of failing ImGui's 16-bit index assertion.
  io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
  if (!default_font) return;
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->AddFontDefault();
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
}

}  // namespace sf::gui
