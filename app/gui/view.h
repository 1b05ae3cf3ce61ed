// How the app looks, apart from what it shows: the UI scale, presentation mode (large crisp fonts, high
// contrast, only the current stage) and full screen. The app holds the wanted ViewSettings; ViewApplier turns
// them into fonts, an ImGui style and a window mode, between frames.
//
// Fonts are rasterised from the scalable TTF at the exact pixel size (the atlas is rebuilt and the GL font
// texture re-created), never scaled up with FontGlobalScale, so text stays sharp at any size.
#pragma once

#include <imgui.h>

#include "gui/options.h"
#include "gui/text/text.h"

struct GLFWwindow;

namespace sf::gui {

struct ViewSettings {
  float ui_scale = 1.0f;   // 0.5 .. 4 (--ui-scale, the View popup's slider)
  bool present = false;    // presentation mode (F5, --present, script `present on|off`)
  bool fullscreen = false; // the primary monitor's video mode (F11, --fullscreen, script `fullscreen on|off`)
  // The language of the app's words (--language, the View popup, script `language ko`): the string table and
  // the fonts' glyphs follow it, live.
  Language language = Language::English;
  bool operator==(const ViewSettings& o) const {
    return ui_scale == o.ui_scale && present == o.present && fullscreen == o.fullscreen && language == o.language;
  }
  bool operator!=(const ViewSettings& o) const { return !(*this == o); }
};

inline constexpr float kBaseFontPixels = 18.0f;     // body text at UI scale 1
inline constexpr float kPresentFontFactor = 1.75f;  // presentation mode: 18 px -> 31.5 px at scale 1
inline constexpr float kLargeFontFactor = 1.35f;    // headers and lesson captions, relative to the body text

// Presentation mode's type grows with the UI scale only as far as a screen of this many lines of body text: the
// stage keeps its room for the maps (32 px at 800 pixels high, 43 at 1080; a larger scale on a small screen
// would leave the maps a strip between the header and the caption).
inline constexpr float kPresentScreenLines = 25.0f;

// The body text's pixel size for these settings, in a window `window_height` high (0: not known, no cap).
float body_font_pixels(const ViewSettings& view, int window_height = 0);

// Rebuilds ImGui's font atlas: the body font (the default) and the large font, both from DejaVu Sans at
// their exact pixel sizes. Between frames only. With `gl`, also re-creates the OpenGL font texture.
void rebuild_fonts(float body_pixels, bool gl);
// The large font (headers, captions), or nullptr when the atlas holds only one font (headless tests).
ImFont* large_font();

// Sets ImGui's style from `base` (the style the window set up at UI scale `base_scale`): sizes scaled to the
// font, colours the base's or (presentation) high contrast: pure black background, white text, bright accents.
// Always from the base, so repeated changes never compound.
void apply_style(const ViewSettings& view, const ImGuiStyle& base, float base_scale, float body_pixels);
// The same from ImGui's dark style at scale 1 (headless tests).
void apply_style(const ViewSettings& view);
// Whether the high-contrast colours are in use (widgets pick their own colours from it).
bool high_contrast();

// The language the app can speak of `wanted`: English where no installed font draws it (gui/fonts.h).
Language drawable_language(Language wanted);

// Applies the wanted settings to the window between frames, doing only what changed: the language's table; fonts
// when the scale, presentation mode or the characters to draw changed (a language, a sentence); the style when the
// scale or presentation mode changed, the window mode when full screen changed (the windowed position and
// size are saved and restored).
class ViewApplier {
 public:
  void apply(GLFWwindow* window, const ViewSettings& wanted);

 private:
  bool applied_once_ = false;
  ViewSettings applied_;
  float applied_pixels_ = 0;  // the body font's size last applied (it follows the window's height when presenting)
  uint64_t applied_glyphs_ = 0;  // the glyph census's generation the atlas holds (gui/text/glyphs.h)
  bool told_no_font_ = false;    // Korean or Chinese was wanted without a font for it: said once
  ImGuiStyle base_style_;  // what the window set up, at base_scale_
  float base_scale_ = 1.0f;
  int windowed_x_ = 0, windowed_y_ = 0, windowed_w_ = 0, windowed_h_ = 0;
};

}  // namespace sf::gui
