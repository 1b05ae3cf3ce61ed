// The fonts the app draws with, and the glyphs its atlas holds.
//
//   DejaVu Sans (fonts-dejavu-core)          Latin, Greek, the arrows and math symbols, and U+FFFD, the
//                                             replacement mark drawn for a character no font has
//   WenQuanYi Micro Hei (fonts-wqy-microhei) Hangul, Han characters and kana: Korean and Chinese in one 5 MB
//                                             font (Noto Sans CJK or WenQuanYi Zen Hei where it is not there)
//   any other font in the system's folders   the first one that has a character neither of those has (Thai in a
//                                             file name, say), found when such a character is first noted
//
// ImGui 1.86 draws from one texture rasterised beforehand, so the atlas holds only the characters that can be on
// screen (gui/text/glyphs.h): the base ranges below, the current language's table and what the app noted. Each
// font is merged into the one before it: a character comes from the first font that has it. A character no font
// has is drawn as U+FFFD and named once on stderr; one beyond U+FFFF (this ImGui build's ImWchar is 16 bits) too.
//
// The folders searched: $STEPFORMER_FONT_DIRS (colon-separated) where set, else /usr/share/fonts,
// /usr/local/share/fonts, $XDG_DATA_HOME/fonts (~/.local/share/fonts) and ~/.fonts.
#pragma once
#include <string>
#include <vector>

#include "gui/text/text.h"

namespace sf::gui {

// Brings the glyph ranges up to the characters noted now (gui/text/glyphs.h), finding fonts for any the loaded ones
// lack. Once before the fonts of an atlas are added: the ranges must stay as they are until the atlas is built
// (ImGui keeps a pointer to them), so a character noted meanwhile (by a background task) waits for the next build.
void prepare_font_glyphs();
// Adds one font at `pixel_size` to ImGui's atlas (the first added is the body font, the second the large one):
// DejaVu Sans with the CJK font and any fallback merged in, each for the glyphs prepared. Without DejaVu Sans,
// ImGui's built-in bitmap font (warned once). Returns the main font's path, or "" for the built-in one.
std::string load_ui_font(float pixel_size);

// Whether the installed fonts draw every character of `language`'s table (English: always).
bool language_has_font(Language language);

// What the last atlas build held: for the View popup, --layout-json and the tests.
struct FontAtlasReport {
  std::vector<std::string> fonts;    // the font files used, the main one first
  int width = 0, height = 0;         // the texture, in pixels
  int glyphs = 0;                    // rasterised, over all sizes
  std::vector<char32_t> missing;     // noted characters no installed font has (drawn as U+FFFD)
};
FontAtlasReport font_atlas_report();

// How many glyphs the last rendered frame drew as a font's fallback glyph (U+FFFD, or what ImGui fell back to):
// a character the atlas does not hold, so a census (gui/text/glyphs.h) missed it or no font has it. Reads the
// frame's draw lists (ImGui::GetDrawData()), after ImGui::Render().
int fallback_glyphs_drawn();

}  // namespace sf::gui
