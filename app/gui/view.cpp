#include "gui/view.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gui/fonts.h"
#include "gui/text/glyphs.h"
#include "gui/window.h"
#if defined(__EMSCRIPTEN__)
#include "web/browser.h"
#endif

namespace sf::gui {

namespace {

bool g_high_contrast = false;

void high_contrast_colours(ImGuiStyle& style) {
  ImVec4* c = style.Colors;
  const ImVec4 black(0, 0, 0, 1), white(1, 1, 1, 1);
  const ImVec4 accent(0.20f, 0.55f, 1.00f, 1.0f);         // bright blue
  const ImVec4 accent_hover(0.40f, 0.70f, 1.00f, 1.0f);
  const ImVec4 highlight(1.00f, 0.85f, 0.10f, 1.0f);      // yellow: what is selected or grabbed
  c[ImGuiCol_Text] = white;
  c[ImGuiCol_TextDisabled] = ImVec4(0.82f, 0.82f, 0.82f, 1.0f);  // still readable on black from afar
  c[ImGuiCol_WindowBg] = black;
  c[ImGuiCol_ChildBg] = black;
  c[ImGuiCol_PopupBg] = ImVec4(0.06f, 0.06f, 0.06f, 0.98f);
  c[ImGuiCol_Border] = ImVec4(0.75f, 0.75f, 0.75f, 1.0f);
  c[ImGuiCol_FrameBg] = ImVec4(0.16f, 0.16f, 0.16f, 1.0f);
  c[ImGuiCol_FrameBgHovered] = ImVec4(0.26f, 0.26f, 0.26f, 1.0f);
  c[ImGuiCol_FrameBgActive] = ImVec4(0.34f, 0.34f, 0.34f, 1.0f);
  c[ImGuiCol_CheckMark] = highlight;
  c[ImGuiCol_SliderGrab] = accent;  // the slider's white value text stays readable over its grab
  c[ImGuiCol_SliderGrabActive] = accent_hover;
  c[ImGuiCol_Button] = accent;
  c[ImGuiCol_ButtonHovered] = accent_hover;
  c[ImGuiCol_ButtonActive] = white;
  c[ImGuiCol_Header] = accent;
  c[ImGuiCol_HeaderHovered] = accent_hover;
  c[ImGuiCol_HeaderActive] = accent_hover;
  c[ImGuiCol_Separator] = ImVec4(0.85f, 0.85f, 0.85f, 1.0f);
  c[ImGuiCol_ScrollbarBg] = black;
  c[ImGuiCol_ScrollbarGrab] = ImVec4(0.55f, 0.55f, 0.55f, 1.0f);
  c[ImGuiCol_PlotHistogram] = highlight;
  c[ImGuiCol_PlotLines] = highlight;
  c[ImGuiCol_ModalWindowDimBg] = ImVec4(0, 0, 0, 0.7f);
}

}  // namespace

float body_font_pixels(const ViewSettings& view, int window_height) {
  const float scale = std::clamp(view.ui_scale, kMinUiScale, kMaxUiScale);
  float pixels = kBaseFontPixels * scale * (view.present ? kPresentFontFactor : 1.0f);
  if (view.present && window_height > 0)  // never below scale 1's presentation size, whatever the window
    pixels = std::min(pixels, std::max(kBaseFontPixels * kPresentFontFactor, window_height / kPresentScreenLines));
  return std::round(pixels);
}

void rebuild_fonts(float body_pixels, bool gl) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  io.FontDefault = nullptr;                          // the first font: the body text
  prepare_font_glyphs();  // once: both sizes get the same ranges, which stay put until the atlas is built
  load_ui_font(body_pixels);
  load_ui_font(std::round(body_pixels * kLargeFontFactor));  // the second: headers and captions
  unsigned char* pixels = nullptr;  // builds the atlas (and marks it ready, as NewFrame wants)
  int width = 0, height = 0;
  io.Fonts->TexDesiredWidth = 0;  // ImGui's choice from the glyphs' area: at most 4096 wide
  io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);
  // ImGui widens the texture only to 4096 and grows it downwards: many large glyphs (Hangul at 86 px) made it
  // 2048 x 8192, past what some renderers take (WebGL's least: 4096). Twice as wide is squarer for the same area.
  if (height > 2 * width && width < 4096) {
    io.Fonts->TexDesiredWidth = 2 * width;
    io.Fonts->ClearTexData();
    io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);
  }
  if (gl) {
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
  }
}

ImFont* large_font() {
  const ImFontAtlas* atlas = ImGui::GetIO().Fonts;
  return atlas->Fonts.Size > 1 ? atlas->Fonts[1] : nullptr;
}

void apply_style(const ViewSettings& view, const ImGuiStyle& base, float base_scale, float body_pixels) {
  ImGuiStyle style = base;
  if (view.present) {
    high_contrast_colours(style);
    style.FrameBorderSize = std::max(style.FrameBorderSize, base_scale);  // widgets keep a visible edge on black
  }
  style.ScaleAllSizes(body_pixels / (kBaseFontPixels * base_scale));
  ImGui::GetStyle() = style;
  g_high_contrast = view.present;
}

void apply_style(const ViewSettings& view) {
  ImGuiStyle dark;
  ImGui::StyleColorsDark(&dark);
  apply_style(view, dark, 1.0f, body_font_pixels(view));
}

bool high_contrast() { return g_high_contrast; }

Language drawable_language(Language wanted) { return language_has_font(wanted) ? wanted : Language::English; }

void ViewApplier::apply(GLFWwindow* window, const ViewSettings& wanted) {
  int window_width = 0, window_height = 0;
  if (window) glfwGetWindowSize(window, &window_width, &window_height);
  const float pixels = body_font_pixels(wanted, window_height);
  const Language language = drawable_language(wanted.language);
  if (language != wanted.language && !told_no_font_) {
    std::fprintf(stderr, "stepformer: warning: %s\n", std::string(table_text(Language::English, T::fonts_cjk_missing)).c_str());
    told_no_font_ = true;
  }
  set_language(language);  // notes its table's characters (a change raises the census's generation)
  const uint64_t glyphs = glyphs_generation();
  if (applied_once_ && wanted == applied_ && pixels == applied_pixels_ && glyphs == applied_glyphs_) return;
  if (!applied_once_) {  // the window's own style (colours, rounding), made at the starting UI scale
    base_style_ = ImGui::GetStyle();
    base_scale_ = std::clamp(wanted.ui_scale, kMinUiScale, kMaxUiScale);
  }
  if (!applied_once_ || wanted.ui_scale != applied_.ui_scale || wanted.present != applied_.present ||
      pixels != applied_pixels_ || glyphs != applied_glyphs_) {
    rebuild_fonts(pixels, true);
    apply_style(wanted, base_style_, base_scale_, pixels);
    applied_pixels_ = pixels;
    applied_glyphs_ = glyphs;
  }
  if (window && (!applied_once_ ? wanted.fullscreen : wanted.fullscreen != applied_.fullscreen)) {
#if defined(__EMSCRIPTEN__)
    web::request_fullscreen(wanted.fullscreen);  // the browser's full screen, at the next click or key
    if (false) {
#else
    if (wanted.fullscreen) {
#endif
      GLFWmonitor* monitor = glfwGetPrimaryMonitor();
      const GLFWvidmode* mode = monitor ? glfwGetVideoMode(monitor) : nullptr;
      if (mode) {
        glfwGetWindowPos(window, &windowed_x_, &windowed_y_);
        glfwGetWindowSize(window, &windowed_w_, &windowed_h_);
        glfwSetWindowMonitor(window, monitor, 0, 0, mode->width, mode->height, mode->refreshRate);
      } else {
        std::fprintf(stderr, "stepformer: no monitor to go full screen on; staying in a window\n");
      }
    } else if (glfwGetWindowMonitor(window)) {
      glfwSetWindowMonitor(window, nullptr, windowed_x_, windowed_y_, windowed_w_, windowed_h_, GLFW_DONT_CARE);
    }
  }
  applied_ = wanted;
  applied_once_ = true;
}

}  // namespace sf::gui
