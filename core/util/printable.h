// Text from files (a model's provenance, its vocabulary, a path) printed to a terminal: control characters
// would let a file move the cursor, retitle the window or hide text (ESC [ ...), so they are shown escaped.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace sf {

// `text` with every C0 control (0x00-0x1f, tab and newline included), DEL, the C1 controls (U+0080-U+009F)
// and every byte that is not part of valid UTF-8 written as \xNN, and the bidirectional controls (U+202E RIGHT-
// TO-LEFT OVERRIDE and the rest: they reorder the text around them on screen) as \u202e; the rest of the UTF-8
// text unchanged.
std::string printable(std::string_view text);
// U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069: the characters that change the direction of the text
// after them.
bool is_bidi_control(uint32_t code_point);
// The same, keeping newlines: for a message of several lines (a lesson's problems, a hint under an error).
std::string printable_lines(std::string_view text);

}  // namespace sf
