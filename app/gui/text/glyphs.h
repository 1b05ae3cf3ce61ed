// The characters the app may draw, so that the font atlas holds exactly those (gui/fonts.h builds it from this).
//
// ImGui 1.86 rasterises a fixed set of glyphs into one texture before a frame; a glyph outside that set is drawn
// as the font's fallback. Korean and Chinese have tens of thousands of characters, far past the texture a software
// renderer allows, so the atlas holds only what can appear: the current language's table (noted by
// set_language()), the values put into its texts (tr()'s arguments: file names, tokens, numbers), the sentence,
// the lesson's captions, the vocabulary samples on screen and what the user types. Whoever takes text from
// outside the table notes it here; a character noted for the first time raises the generation, and the fonts are
// rebuilt between frames (ViewApplier).
//
// Thread-safe: a background task may format a message. ASCII is always in the atlas and costs nothing to note.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace sf::gui {

// Notes every character of `utf8`. Invalid UTF-8 bytes are drawn by ImGui as U+FFFD, which the atlas always holds.
void note_glyphs(std::string_view utf8);
void note_glyph(char32_t code_point);
// Raised each time a character is noted for the first time (since the last forget_noted_glyphs()).
uint64_t glyphs_generation();
// Every character noted, ascending, without ASCII.
std::vector<char32_t> noted_glyphs();
// Forgets what was noted (a language change: the next frames note what they draw again). Raises the generation.
void forget_noted_glyphs();

// The characters of `utf8` as code points (util/utf8.h: a byte that is not valid UTF-8 gives U+FFFD, as ImGui
// draws it).
std::vector<char32_t> utf8_code_points(std::string_view utf8);

}  // namespace sf::gui
