// Text with the paper's notation: every formula on a stage, and a lesson caption's formulas, written as in
// "Attention Is All You Need" (W_i^Q, d_k, softmax(QK^T / sqrt(d_k)) V) with real sub- and superscripts.
//
// Spans between dollar signs are math, the rest plain text ("scale by $\sqrt{d_k}$, then softmax"):
//   x_i  x_{model}     subscript: one character (UTF-8), or a group in braces
//   W^Q  W_i^Q  10000^{2i/d_{model}}    superscript; sub- and superscripts nest, each level smaller
//   \sqrt{d_k}         a square root: the sign, and a bar over its argument
//   \cdot \times \to \infty \sum \ldots \epsilon \gamma \beta \mu \sigma \le \ge \in: their symbols;
//   \log \exp \max: the words
//   \$                 a dollar sign (in plain text too)
// Anything else is drawn as it is (Greek letters and symbols as UTF-8: ×, ·, →, ≤). A line breaks only at a
// space outside braces, so a formula's terms stay whole.
#pragma once
#include <imgui.h>

#include <string>

namespace sf::gui {

// The size `text` takes in the current font wrapped at `wrap_width` (0: never wrapped).
ImVec2 math_text_size(const std::string& text, float wrap_width = 0);
// Draws `text` at the cursor in `colour` (0: the text colour), wrapped at `wrap_width` (0: the window's right
// edge; < 0: never), and moves the cursor past it as ImGui::TextUnformatted does. Records it as an item named
// `item` (gui/render/item_placements.h) with the source text when `item` is not null.
void math_text(const std::string& text, float wrap_width = 0, ImU32 colour = 0, const char* item = nullptr);
// `text` (a token, a file name) to put into plain parts of a math text as it is: its dollars escaped.
std::string math_escape(const std::string& text);
// The same text on one line without its markup, as a tooltip or an export's description shows it: the dollars
// dropped, "\sqrt{d_k}" as "\u221a(d_k)", "\cdot" as "\u00b7"; sub- and superscripts stay as written (W_i^Q).
std::string math_plain(const std::string& text);

}  // namespace sf::gui
