// Where a line of text may break, in any of the app's languages: one greedy line breaker for the GUI's wrapped
// text (widths in pixels, gui/widgets.h text_wrapped) and the help's terminal lines (widths in columns).
//
//   English and Korean   at a space (Korean, as English, writes spaces between words)
//   Chinese (Japanese)   also between two characters where one is a Han character, kana or CJK punctuation,
//                        but never before a closing mark (，。、：；！？）」』》” and , . : ; ) nor after an opening one
//                        (（「『《“ and ( ), as Chinese typesetting has it
//   a run with no such place wider than a line is cut where it fills the line; '\n' always breaks.
// Never inside a number: ImGui 1.86's own wrapping breaks after any '.', so "-0.01" could end a line as "-0." --
// the reason the app wraps its text itself.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sf::gui {

// Whether a line may break between `before` and `after` without a space there (the Chinese rule above).
bool cjk_break_between(char32_t before, char32_t after);
bool cjk_closing_mark(char32_t c);
bool cjk_opening_mark(char32_t c);

// The lines of `text` at most `width` wide, where `advance` gives one character's width; the spaces a line ends
// at are dropped. An empty text is one empty line.
std::vector<std::string> break_lines(std::string_view text, float width, const std::function<float(char32_t)>& advance);

}  // namespace sf::gui
