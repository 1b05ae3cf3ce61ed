// The platform layer: a GLFW window with an OpenGL 3.3 core context, Dear ImGui (GLFW + OpenGL3 backends)
// and the scalable TTF font. Nothing model-specific lives here.
#pragma once
#include "io/user_files.h"
#include <string>
#include <vector>

struct GLFWwindow;

namespace sf::gui {

class Window {
 public:
  // Throws WindowError with a message for the user (no display, no OpenGL 3.3, ...).
  Window(int width, int height, const char* title, bool visible, float ui_scale);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  bool should_close() const;
  // Poll events, start an ImGui frame. mouse_override (framebuffer pixels) replaces the pointer's position,
  // for scripts that hover a cell.
  void begin_frame(const float* mouse_override = nullptr);
  void end_frame();    // render ImGui into the back buffer (call save_screenshot after this, before present)
  void present();      // swap buffers
  void finish_gpu();   // waits until the GPU has drawn the frame (glFinish), for frame timing

  // Reads the back buffer and writes a PNG. Returns an empty string on success, else the reason.
  std::string save_screenshot(const std::string& png_path, const WriteRules& rules) const;
  void framebuffer_size(int* width, int* height) const;
  // The window's title (the task bar's, the window list's); set only when it changes.
  void set_title(const std::string& title);
  GLFWwindow* handle() const { return window_; }

  // Files dropped onto the window since the last call (GLFW's drop callback only queues them: the app opens
  // them on its next frame, never from inside the callback).
  std::vector<std::string> take_dropped_paths();
  // Rebuilds the font at the new scale and rescales the style; takes effect from the next begin_frame. Call
  // between frames (not between begin_frame and end_frame).
  void set_ui_scale(float ui_scale);
  float ui_scale() const { return ui_scale_; }

 private:
  static void on_drop(GLFWwindow* window, int count, const char** paths);
  GLFWwindow* window_ = nullptr;
  float ui_scale_ = 1.0f;
  std::string title_;
  std::vector<std::string> dropped_;
};

struct WindowError {
  std::string message;
};

// The app's style (dark, rounded) with every size multiplied by `ui_scale`.
void apply_ui_style(float ui_scale);

}  // namespace sf::gui
