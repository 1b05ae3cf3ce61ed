#include "gui/window.h"

#include "gui/export.h"
#include "gui/fonts.h"
#include "gui/render/capture.h"
#include "gui/text/text.h"

#include "gui/render/gl.h"
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace sf::gui {

namespace {

std::string g_last_glfw_error;

void on_glfw_error(int code, const char* description) {
  g_last_glfw_error = "GLFW error " + std::to_string(code) + ": " + (description ? description : "?");
}

}  // namespace

void apply_ui_style(float ui_scale) {
  ImGuiStyle style;  // a fresh style: ScaleAllSizes multiplies, so rescaling the current one would compound
  ImGui::StyleColorsDark(&style);
  style.WindowRounding = 4.0f;
  style.FrameRounding = 3.0f;
  // Dialogs stand out: the rest of the window goes dark behind them (the dark style's default lightens it
  // a little, which hides a dialog among the panels).
  style.Colors[ImGuiCol_ModalWindowDimBg] = ImVec4(0.0f, 0.0f, 0.0f, 0.55f);
  style.ScaleAllSizes(ui_scale);
  ImGui::GetStyle() = style;
}

Window::Window(int width, int height, const char* title, bool visible, float ui_scale) {
  glfwSetErrorCallback(on_glfw_error);
  if (!glfwInit()) {
    throw WindowError{"cannot open a display (" + g_last_glfw_error +
                      ").\nStepformer needs a graphical display with OpenGL 3.3. Set DISPLAY, or run it headless "
                      "under a virtual display: xvfb-run -a stepformer ..."};
  }
#if defined(__EMSCRIPTEN__)
  // In a web page the window is the page's canvas, and the context WebGL2 (OpenGL ES 3.0), as linked
  // (-sMIN_WEBGL_VERSION=2); app/web/browser.cpp keeps the canvas as large as the page.
  glfwWindowHint(GLFW_CLIENT_API, GLFW_OPENGL_ES_API);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
#else
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
#endif
  window_ = glfwCreateWindow(width, height, title, nullptr, nullptr);
  title_ = title;
  if (!window_) {
    const std::string reason = g_last_glfw_error;
    glfwTerminate();
    throw WindowError{"cannot create a window with an OpenGL 3.3 core context (" + reason +
                      ").\nStepformer needs OpenGL 3.3 or newer: update the graphics driver, or use Mesa "
                      "(llvmpipe) under xvfb-run -a."};
  }
  glfwMakeContextCurrent(window_);
#if !defined(__EMSCRIPTEN__)  // a page draws at the browser's pace (requestAnimationFrame: main.cpp)
  glfwSwapInterval(visible ? 1 : 0);
#endif

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // layout is ours; settings go to the XDG config directory, not the working dir
  ui_scale_ = ui_scale;
  apply_ui_style(ui_scale);
  prepare_font_glyphs();
  load_ui_font(18.0f * ui_scale);
  ImGui_ImplGlfw_InitForOpenGL(window_, true);
#if defined(__EMSCRIPTEN__)
  ImGui_ImplOpenGL3_Init("#version 300 es");
#else
  ImGui_ImplOpenGL3_Init("#version 330 core");
#endif
  // ImGui's GLFW backend does not use the window's user pointer; the drop callback finds this Window by it.
  glfwSetWindowUserPointer(window_, this);
  glfwSetDropCallback(window_, &Window::on_drop);
}

void Window::on_drop(GLFWwindow* window, int count, const char** paths) {
  auto* self = static_cast<Window*>(glfwGetWindowUserPointer(window));
  if (!self) return;
  for (int i = 0; i < count; ++i)
    if (paths[i]) self->dropped_.emplace_back(paths[i]);
}

std::vector<std::string> Window::take_dropped_paths() {
  std::vector<std::string> out;
  out.swap(dropped_);
  return out;
}

void Window::set_ui_scale(float ui_scale) {
  ui_scale = std::clamp(ui_scale, 0.5f, 4.0f);
  if (ui_scale == ui_scale_) return;
  ui_scale_ = ui_scale;
  apply_ui_style(ui_scale);
  ImGui::GetIO().Fonts->Clear();
  prepare_font_glyphs();
  load_ui_font(18.0f * ui_scale);
  ImGui_ImplOpenGL3_DestroyFontsTexture();
  ImGui_ImplOpenGL3_CreateFontsTexture();
}

Window::~Window() {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window_);
  glfwTerminate();
}

bool Window::should_close() const { return glfwWindowShouldClose(window_); }

void Window::begin_frame(const float* mouse_override) {
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  if (mouse_override) {
    const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
    ImGui::GetIO().MousePos = ImVec2(mouse_override[0] / scale.x, mouse_override[1] / scale.y);
  }
  ImGui::NewFrame();
}

void Window::end_frame() {
  ImGui::Render();
  int w = 0, h = 0;
  glfwGetFramebufferSize(window_, &w, &h);
  glViewport(0, 0, w, h);
  // The background of the full-screen main window, which draws none itself (App::frame): the style's window
  // colour as it looks over black.
  const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  glClearColor(bg.x * bg.w, bg.y * bg.w, bg.z * bg.w, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

void Window::present() { glfwSwapBuffers(window_); }

void Window::finish_gpu() { glFinish(); }

void Window::framebuffer_size(int* width, int* height) const { glfwGetFramebufferSize(window_, width, height); }

std::string Window::save_screenshot(const std::string& png_path, const WriteRules& rules) const {
  std::vector<unsigned char> rgb;
  int w = 0, h = 0;
  if (const std::string error = read_back_buffer({}, &rgb, &w, &h); !error.empty()) return error;
  const std::string png = png_bytes(rgb, w, h);
  if (png.empty()) return tr(T::app_export_png_failed);
  return write_user_file(png_path, png, rules);
}

void Window::set_title(const std::string& title) {
  if (title == title_) return;
  title_ = title;
  glfwSetWindowTitle(window_, title.c_str());
}

}  // namespace sf::gui
