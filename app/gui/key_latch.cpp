#include "gui/key_latch.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>

#include <bitset>

namespace sf::gui {

namespace {

std::bitset<GLFW_KEY_LAST + 1> g_since_last_frame, g_this_frame;

void on_key(GLFWwindow* window, int key, int scancode, int action, int mods) {
  ImGui_ImplGlfw_KeyCallback(window, key, scancode, action, mods);
  if (action == GLFW_PRESS && key >= 0 && key <= GLFW_KEY_LAST) g_since_last_frame.set(static_cast<size_t>(key));
}

}  // namespace

void install_key_latch(GLFWwindow* window) { glfwSetKeyCallback(window, on_key); }

void begin_key_latch_frame() {
  g_this_frame = g_since_last_frame;
  g_since_last_frame.reset();
}

bool key_pressed(int key, bool repeat) {
  if (ImGui::IsKeyPressed(key, repeat)) return true;
  return key >= 0 && key <= GLFW_KEY_LAST && g_this_frame.test(static_cast<size_t>(key));
}

}  // namespace sf::gui
