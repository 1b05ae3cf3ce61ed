// Key taps that Dear ImGui 1.86 would miss. Its GLFW backend only sets a key's "down" state; when a press and
// its release arrive in the same glfwPollEvents (a presenter's clicker, xdotool key, a very short tap), the key
// is never down during a frame and ImGui::IsKeyPressed never fires. The latch remembers every press until the
// next frame has seen it. (ImGui 1.87's input queue does the same.)
#pragma once

struct GLFWwindow;

namespace sf::gui {

// Takes over the window's key callback, forwarding every event to ImGui's GLFW backend (after its init).
void install_key_latch(GLFWwindow* window);
// Once per frame, after the events were polled: the presses since the last call become this frame's.
void begin_key_latch_frame();
// The key went down since the last frame: ImGui::IsKeyPressed(key, repeat), or a latched press. Without a
// latch installed (the headless tests) this is ImGui::IsKeyPressed alone.
bool key_pressed(int key, bool repeat = true);

}  // namespace sf::gui
