// Small widgets shared by every panel.
#pragma once
#include <imgui.h>

#include <string>
#include <string_view>

#include "model/config.h"
#include "transformer/interventions.h"

namespace sf::gui {

// A stage's plain-language explanation, always visible under its title, wrapped to the panel's width in a
// softer colour than the numbers (students read it; it is not hidden behind a hover).
void explanation(const char* text);
// A stage's formula in the paper's notation (gui/render/math_text.h: "$head_i = softmax(Q_i K_i^T / \sqrt{d_k}) V_i$"),
// wrapped at the window's edge, recorded as an item named `item` (default "formula") for the tests.
void formula(const std::string& text, const char* item = nullptr);
// Whether explanation() draws (the app hides them in presentation mode while a lesson's caption explains).
void show_explanations(bool shown);
bool explanations_shown();
// In presentation mode each paragraph folds behind a one-line "Explain" toggle (one switch for all stages;
// folded at first, so the data gets the screen); in normal mode they are open.
void fold_explanations(bool folded);
bool explanations_folded();
// The height explanation(text) takes at `width` (0 when hidden; a button's line when folded).
float explanation_height(const char* text, float width);

// An indeterminate progress indicator: a ring of dots, one bright dot going round (animated by ImGui's clock).
// Occupies a square of 2 * radius; the frame loop keeps drawing while it shows.
void spinner(float radius);
// An indeterminate progress bar of `size`: a bright segment sliding across a dim track.
void moving_bar(ImVec2 size);

// ImGui::SameLine(0, spacing) when the next `width` (ImGui units) still fits before the window's right edge;
// otherwise the next item starts a line of its own (large type in presentation mode would push it off).
void same_line_if_fits(float width, float spacing = -1.0f);
// The width of a checkbox or radio button with `label`, of a button, and of a field `field_width` wide with
// its label after it (a slider, an input); text after "##" is not shown, so not counted.
float labelled_box_width(const char* label);
float button_width(const char* label);
float labelled_field_width(float field_width, const char* label);
// Text in the disabled colour, wrapped at the window's edge.
void text_disabled_wrapped(const char* fmt, ...) IM_FMTARGS(1);
// Text wrapped at the wrap position pushed (ImGui::PushTextWrapPos; none pushed: not wrapped),
// but at the places gui/text/line_breaks.h allows: spaces, and between Chinese characters; never inside a number
// ("-0.01" stays whole, where ImGui's own wrapping breaks after any '.'). In `colour` (nullptr: the text colour).
void text_wrapped_at_pos(std::string_view text, const ImVec4* colour = nullptr);
// The same at the window's edge where no wrap position is pushed: ImGui::TextWrapped's place, broken at the right
// places.
void text_wrapped(std::string_view text, const ImVec4* colour = nullptr);

// A slider over the indices 0 .. count - 1 of a layer or a head that shows and takes the numbers people read,
// 1 .. count (transformer/interventions.h shown_number). True when it changed *index.
bool numbered_slider(const char* label, int* index, int count);

// Presentation mode: a stage's controls (kind, layer, head, switches) wait behind this one-line toggle, folded at
// first (the header names what is shown; the maps get the screen). Returns whether they are open; elsewhere
// (normal mode) always true and draws nothing.
bool controls_toggle(bool* open);

// Text drawn at `at` in `scale` of the font's size, at most `width` wide: shrunk down to 0.7 of that where it is
// wider, clipped beyond that (a grid's cells and columns: the logit lens, the attribution maps).
void fitted_text(ImDrawList* draw, ImVec2 at, float width, float line, ImU32 colour, const std::string& text,
                 float scale = 1.0f);
// A colormap's colour (gui/render/colormap.h) at t in [0, 1], for ImGui's draw lists.
ImU32 colormap_colour(int colormap, float t);

// A probability as a class reads it: two significant digits however small ("0.93", "0.012", "0.00017",
// "3.1e-07"), so that no candidate reads 0.000; "0" only for an exact zero, "1" only for an exact one.
std::string probability_text(double p);

// The attention kind a panel shows: encoder self, decoder self (masked) or cross, as radio buttons; a model
// without an encoder (decoder-only) has one kind, named without a choice.
void attention_kind_picker(AttentionKind* kind, const Config& config);
// The stack and layer a per-layer stage shows (add & norm, feed-forward): "encoder" / "decoder" and a layer slider
// numbered from 1 of `layers` (`*layer` from 0), the slider `slider_em` type sizes wide (a decoder-only model:
// the slider alone).
void stack_and_layer_picker(AttentionKind* kind, int* layer, int layers, float slider_em, const Config& config);

}  // namespace sf::gui

#include <imgui.h>

namespace sf::gui {

// Text drawn rotated by `radians` (counter-clockwise) about `pivot`, its baseline starting at the pivot:
// column labels of heatmaps read bottom to top at pi/2 (screen y points down). `size`: the font size (0: the
// current one).
void rotated_text(ImDrawList* draw, ImVec2 pivot, ImU32 colour, const char* text, float radians, float size = 0);

}  // namespace sf::gui

#include <string>
#include <vector>

namespace sf::gui {

// [SECTION] the hovered token or cell, marked in every view
// Source: positions of the encoder's input; Target: positions of the decoder's input (<bos> + translation).
enum class TokenSide { Source, Target };
// What an axis of tokens is in an attention: the queries (an attention map's rows, Q, a head's output), the
// keys (its columns, K, V), or plain tokens (an embedding's rows, a token box), which are either.
enum class TokenRole { Token, Query, Key };

// What the pointer is on: a query token, a key token, or both (a cell of an attention map: query row `query`,
// key column `key`). Hovering a plain token names it as both. -1: none.
struct TokenHover {
  TokenSide query_side = TokenSide::Source, key_side = TokenSide::Source;
  int query = -1, key = -1;
};

// Called once at the start of each frame: what was reported during the last frame becomes what is shown.
void begin_token_hover_frame();
void report_hovered_token(TokenSide side, int index);  // a plain token: query and key
void report_hovered_query(TokenSide side, int index);
void report_hovered_key(TokenSide side, int index);
void report_hovered_cell(TokenSide query_side, int query, TokenSide key_side, int key);
const TokenHover& hovered_tokens();  // what last frame reported
// Whether token `index` of `side` is hovered in the role `role`: a query axis marks the hovered query, a key
// axis the hovered key, a plain axis either. (Every view of one attention then marks the same row and column.)
bool is_hovered_token(TokenSide side, int index, TokenRole role = TokenRole::Token);
constexpr ImU32 kHoverColour = IM_COL32(240, 150, 30, 255);


}  // namespace sf::gui
