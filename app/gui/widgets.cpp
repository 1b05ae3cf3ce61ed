#include "gui/widgets.h"

#include "gui/render/colormap.h"

#include "gui/text/glyphs.h"

#include <imgui.h>
#include <imgui_internal.h>  // the window's wrap position (DC.TextWrapPos) and CalcWrapWidthForPos

#include <cstdarg>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/text/line_breaks.h"
#include "gui/text/text.h"
#include "gui/view.h"

namespace sf::gui {

namespace {
bool g_explanations_shown = true;
bool g_folded_when_presenting = true;  // presentation mode: the paragraphs wait behind "Explain"
bool folded() { return high_contrast() && g_folded_when_presenting; }
}  // namespace

void show_explanations(bool shown) { g_explanations_shown = shown; }
bool explanations_shown() { return g_explanations_shown; }
void fold_explanations(bool folded) { g_folded_when_presenting = folded; }
bool explanations_folded() { return folded(); }

float explanation_height(const char* text, float width) {
  if (!g_explanations_shown) return 0.0f;
  const float spacing = ImGui::GetStyle().ItemSpacing.y;
  if (folded()) return ImGui::GetFrameHeight() + spacing;
  const float toggle = high_contrast() ? ImGui::GetFrameHeight() + spacing : 0.0f;
  return toggle + math_text_size(text, width).y + spacing;
}

void explanation(const char* text) {
  if (!g_explanations_shown) return;
  if (high_contrast()) {
    // Presentation mode: a one-line toggle; the paragraph only when asked for (one switch for every stage).
    ImGui::PushID(text);
    if (ImGui::SmallButton(g_folded_when_presenting ? tr(T::widgets_explain) : tr(T::widgets_hide_explanation)))
      g_folded_when_presenting = !g_folded_when_presenting;
    record_item("explain", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, g_folded_when_presenting ? "folded" : "open");
    ImGui::PopID();
    if (g_folded_when_presenting) return;
  }
  // Softer than the numbers; in presentation mode a bright pale blue that still reads on a projector. The
  // paper's notation in $...$ (gui/render/math_text.h), wrapped at the window's right edge.
  const ImVec4 colour = high_contrast() ? ImVec4(0.80f, 0.92f, 1.0f, 1.0f) : ImVec4(0.74f, 0.82f, 0.92f, 1.0f);
  math_text(text, 0.0f, ImGui::ColorConvertFloat4ToU32(colour), "explanation");
}

void formula(const std::string& text, const char* item) { math_text(text, 0.0f, 0, item ? item : "formula"); }

void same_line_if_fits(float width, float spacing) {
  const float gap = spacing >= 0 ? spacing : ImGui::GetStyle().ItemSpacing.x;
  const float right_edge = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  if (ImGui::GetItemRectMax().x + gap + width <= right_edge) ImGui::SameLine(0, spacing);
}

float labelled_box_width(const char* label) {
  return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
}

float button_width(const char* label) {
  return ImGui::CalcTextSize(label, nullptr, true).x + 2 * ImGui::GetStyle().FramePadding.x;
}

float labelled_field_width(float field_width, const char* label) {
  const float text = ImGui::CalcTextSize(label, nullptr, true).x;
  return field_width + (text > 0 ? ImGui::GetStyle().ItemInnerSpacing.x + text : 0.0f);
}

void text_disabled_wrapped(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string text(static_cast<size_t>(std::max(n, 0)), '\0');
  if (n > 0) std::vsnprintf(text.data(), text.size() + 1, fmt, args);
  va_end(args);
  text_wrapped(text, &ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
}

void text_wrapped_at_pos(std::string_view text, const ImVec4* colour) {
  note_glyphs(text);
  ImGuiWindow* window = ImGui::GetCurrentWindow();
  std::string drawn(text);
  if (window->DC.TextWrapPos >= 0.0f) {  // a wrap position is pushed: break the lines here, ImGui draws them as they are
    const float width = ImGui::CalcWrapWidthForPos(ImGui::GetCursorScreenPos(), window->DC.TextWrapPos);
    const ImFont* font = ImGui::GetFont();
    const float scale = ImGui::GetFontSize() / font->FontSize;
    drawn.clear();
    for (const std::string& line : break_lines(text, width, [&](char32_t c) {
           return font->GetCharAdvance(static_cast<ImWchar>(c <= IM_UNICODE_CODEPOINT_MAX ? c : IM_UNICODE_CODEPOINT_INVALID)) * scale;
         }))
      drawn += (drawn.empty() ? "" : "\n") + line;
  }
  ImGui::PushTextWrapPos(-1.0f);
  if (colour) ImGui::PushStyleColor(ImGuiCol_Text, *colour);
  ImGui::TextUnformatted(drawn.data(), drawn.data() + drawn.size());
  if (colour) ImGui::PopStyleColor();
  ImGui::PopTextWrapPos();
}

void text_wrapped(std::string_view text, const ImVec4* colour) {
  const bool at_edge = ImGui::GetCurrentWindow()->DC.TextWrapPos < 0.0f;  // as ImGui::TextWrapped: a wrap position
  if (at_edge) ImGui::PushTextWrapPos(0.0f);                              // pushed before stays
  text_wrapped_at_pos(text, colour);
  if (at_edge) ImGui::PopTextWrapPos();
}

void spinner(float radius) {
  constexpr int kDots = 10;
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const ImVec2 centre(p.x + radius, p.y + radius);
  const float turn = static_cast<float>(ImGui::GetTime()) * 1.5f;  // turns per second
  const int lead = static_cast<int>(turn * kDots) % kDots;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  for (int i = 0; i < kDots; ++i) {
    const float a = 6.2831853f * i / kDots;
    const int behind = (lead - i + kDots) % kDots;  // 0 = the bright one, then fading trail
    const float alpha = std::max(0.15f, 1.0f - behind * 0.22f);
    draw->AddCircleFilled(ImVec2(centre.x + std::cos(a) * radius * 0.75f, centre.y + std::sin(a) * radius * 0.75f),
                          radius * 0.17f, ImGui::GetColorU32(ImVec4(1.0f, 0.8f, 0.35f, alpha)));
  }
  ImGui::Dummy(ImVec2(2 * radius, 2 * radius));
}

void moving_bar(ImVec2 size) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float rounding = size.y * 0.5f;
  draw->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), ImGui::GetColorU32(ImVec4(1.0f, 0.8f, 0.35f, 0.2f)), rounding);
  const float phase = std::fmod(static_cast<float>(ImGui::GetTime()) * 0.8f, 1.0f);  // sweeps per second
  const float segment = size.x * 0.3f;
  const float x0 = p.x - segment + phase * (size.x + segment);
  draw->AddRectFilled(ImVec2(std::max(x0, p.x), p.y), ImVec2(std::min(x0 + segment, p.x + size.x), p.y + size.y),
                      ImGui::GetColorU32(ImVec4(1.0f, 0.8f, 0.35f, 1.0f)), rounding);
  ImGui::Dummy(size);
}

bool controls_toggle(bool* open) {
  if (!high_contrast()) return true;
  if (ImGui::SmallButton(*open ? tr(T::widgets_controls_open) : tr(T::widgets_controls_folded))) *open = !*open;
  record_item("controls", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, *open ? "open" : "folded");
  return *open;
}

void fitted_text(ImDrawList* draw, ImVec2 at, float width, float line, ImU32 colour, const std::string& text,
                 float scale) {
  const float w = ImGui::CalcTextSize(text.c_str()).x * scale;
  const float size = ImGui::GetFontSize() * scale * std::clamp(width / std::max(1.0f, w), 0.7f, 1.0f);
  draw->PushClipRect(at, ImVec2(at.x + width, at.y + line), true);
  draw->AddText(ImGui::GetFont(), size, at, colour, text.c_str());
  draw->PopClipRect();
}

ImU32 colormap_colour(int colormap, float t) {
  const Rgb c = colormap_rgb(static_cast<Colormap>(colormap), t);
  return IM_COL32(static_cast<int>(c.r * 255), static_cast<int>(c.g * 255), static_cast<int>(c.b * 255), 255);
}

std::string probability_text(double p) {
  if (!(p == p)) return "nan";
  if (p <= 0.0) return p == 0.0 ? std::string("0") : std::string("-").append(probability_text(-p));
  if (p >= 1.0) return p == 1.0 ? "1" : "1+";
  char text[32];
  if (p >= 0.995) {
    std::snprintf(text, sizeof(text), "%.3f", p);  // "0.997": two significant digits would round it to 1
  } else if (p >= 1e-4) {
    // Two significant digits in fixed notation: 0.93, 0.012, 0.00017.
    const int decimals = std::max(2, 1 - static_cast<int>(std::floor(std::log10(p))));
    std::snprintf(text, sizeof(text), "%.*f", decimals, p);
  } else {
    std::snprintf(text, sizeof(text), "%.1e", p);
  }
  return text;
}

bool numbered_slider(const char* label, int* index, int count) {
  int shown = shown_number(*index);
  const bool changed = ImGui::SliderInt(label, &shown, 1, std::max(1, count));
  if (changed) *index = std::clamp(shown - 1, 0, std::max(0, count - 1));
  return changed;
}

void attention_kind_picker(AttentionKind* kind, const Config& config) {
  int k = static_cast<int>(*kind);
  if (!config.has_encoder()) {  // one kind: the decoder's masked self-attention, named, nothing to pick
    ImGui::TextUnformatted(tr(T::widgets_decoder_self_masked));
    *kind = AttentionKind::Decoder;
    return;
  }
  if (!config.has_decoder()) {  // an encoder-only model's one kind: its (bidirectional) self-attention
    ImGui::TextUnformatted(tr(T::widgets_encoder_self));
    *kind = AttentionKind::Encoder;
    return;
  }
  ImGui::RadioButton(tr(T::widgets_encoder_self), &k, static_cast<int>(AttentionKind::Encoder));
  ImGui::SameLine();
  ImGui::RadioButton(tr(T::widgets_decoder_self_masked), &k, static_cast<int>(AttentionKind::Decoder));
  ImGui::SameLine();
  ImGui::RadioButton(tr(T::widgets_cross), &k, static_cast<int>(AttentionKind::Cross));
  *kind = static_cast<AttentionKind>(k);
}

void stack_and_layer_picker(AttentionKind* kind, int* layer, int layers, float slider_em, const Config& config) {
  if (!config.has_encoder()) {  // one stack: the layer alone
    *kind = AttentionKind::Decoder;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * slider_em);
    numbered_slider(tr(T::widgets_layer), layer, layers);
    return;
  }
  if (!config.has_decoder()) {  // an encoder-only model: the encoder's layers alone
    *kind = AttentionKind::Encoder;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * slider_em);
    numbered_slider(tr(T::widgets_layer), layer, layers);
    return;
  }
  const bool encoder = *kind == AttentionKind::Encoder;
  int side = encoder ? 0 : 1;
  ImGui::RadioButton(tr(T::widgets_encoder), &side, 0);
  ImGui::SameLine();
  ImGui::RadioButton(tr(T::widgets_decoder), &side, 1);
  if (side != (encoder ? 0 : 1)) *kind = side == 0 ? AttentionKind::Encoder : AttentionKind::Decoder;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * slider_em);
  numbered_slider(tr(T::widgets_layer), layer, layers);
}

void rotated_text(ImDrawList* draw, ImVec2 pivot, ImU32 colour, const char* text, float radians, float size) {
  note_glyphs(text ? text : "");
  // Draw unrotated at the pivot, then rotate the new vertices about it (ImGui 1.86 has no rotated text).
  // The font is asked directly with an unbounded rectangle: AddText would drop the glyphs whose *unrotated*
  // place lies outside the clip rectangle (a last column's label lost its end: "<eo"); the draw command's clip
  // rectangle still clips the rotated text on the GPU.
  const int first = draw->VtxBuffer.Size;
  const float unbounded = 1e7f;
  ImGui::GetFont()->RenderText(draw, size > 0 ? size : ImGui::GetFontSize(), pivot, colour,
                               ImVec4(-unbounded, -unbounded, unbounded, unbounded), text, text + std::strlen(text));
  const float c = std::cos(radians), s = std::sin(radians);
  for (int i = first; i < draw->VtxBuffer.Size; ++i) {
    ImVec2& p = draw->VtxBuffer[i].pos;
    const float x = p.x - pivot.x, y = p.y - pivot.y;
    p = ImVec2(pivot.x + c * x + s * y, pivot.y - s * x + c * y);
  }
}

}  // namespace sf::gui

namespace sf::gui {

namespace {

TokenHover g_shown, g_current;

}  // namespace

void begin_token_hover_frame() {
  g_shown = g_current;
  g_current = {};
}

void report_hovered_token(TokenSide side, int index) { g_current = {side, side, index, index}; }
void report_hovered_query(TokenSide side, int index) { g_current = {side, side, index, -1}; }
void report_hovered_key(TokenSide side, int index) { g_current = {side, side, -1, index}; }
void report_hovered_cell(TokenSide query_side, int query, TokenSide key_side, int key) {
  g_current = {query_side, key_side, query, key};
}
const TokenHover& hovered_tokens() { return g_shown; }

bool is_hovered_token(TokenSide side, int index, TokenRole role) {
  if (index < 0) return false;
  const bool query = g_shown.query == index && g_shown.query_side == side;
  const bool key = g_shown.key == index && g_shown.key_side == side;
  return role == TokenRole::Query ? query : role == TokenRole::Key ? key : query || key;
}


}  // namespace sf::gui
