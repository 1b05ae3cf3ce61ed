#include "gui/widgets.h"

#include <imgui.h>

#include "gui/view.h"

namespace sf::gui {

namespace {
bool g_explanations_shown = true;
}  // namespace

void show_explanations(bool shown) { g_explanations_shown = shown; }

void explanation(const char* text) {
  if (!g_explanations_shown) return;
  // Softer than the numbers; in presentation mode a bright pale blue that still reads on a projector.
  ImGui::PushStyleColor(ImGuiCol_Text, high_contrast() ? ImVec4(0.80f, 0.92f, 1.0f, 1.0f) : ImVec4(0.74f, 0.82f, 0.92f, 1.0f));
  ImGui::PushTextWrapPos(0.0f);  // the window's right edge
  ImGui::TextUnformatted(text);
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
}

void attention_kind_picker(AttentionKind* kind) {
  int k = static_cast<int>(*kind);
  ImGui::RadioButton("encoder self", &k, static_cast<int>(AttentionKind::Encoder));
  ImGui::SameLine();
  ImGui::RadioButton("decoder self (masked)", &k, static_cast<int>(AttentionKind::Decoder));
  ImGui::SameLine();
  ImGui::RadioButton("cross", &k, static_cast<int>(AttentionKind::Cross));
  *kind = static_cast<AttentionKind>(k);
}

}  // namespace sf::gui

#include <algorithm>
#include <cmath>

namespace sf::gui {

void rotated_text(ImDrawList* draw, ImVec2 pivot, ImU32 colour, const char* text, float radians, float size) {
  // Draw unrotated at the pivot, then rotate the new vertices about it (ImGui 1.86 has no rotated text).
  const int first = draw->VtxBuffer.Size;
  draw->AddText(ImGui::GetFont(), size > 0 ? size : ImGui::GetFontSize(), pivot, colour, text);
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

struct HoverSlots {
  TokenSide side = TokenSide::Source;
  int index = -1;
};
HoverSlots g_shown, g_current;

}  // namespace

void begin_token_hover_frame() {
  g_shown = g_current;
  g_current = {};
}

void report_hovered_token(TokenSide side, int index) { g_current = {side, index}; }

bool is_hovered_token(TokenSide side, int index) { return g_shown.index == index && g_shown.side == side && index >= 0; }

void token_row_labels(ImVec2 origin, const std::vector<std::string>& labels, float row_height, float width,
                      TokenSide side) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float font = ImGui::GetFontSize();
  for (size_t i = 0; i < labels.size(); ++i) {
    const ImVec2 p0(origin.x, origin.y + i * row_height), p1(origin.x + width, origin.y + (i + 1) * row_height);
    const int index = static_cast<int>(i);
    if (is_hovered_token(side, index)) draw->AddRectFilled(p0, p1, kHoverColour, 3.0f);
    if (ImGui::IsMouseHoveringRect(p0, p1) && ImGui::IsWindowHovered()) report_hovered_token(side, index);
    // Rows lower than the text (many tokens, large type): the label shrinks to its row rather than overlap.
    const float size = std::min(font, row_height);
    draw->AddText(ImGui::GetFont(), size, ImVec2(origin.x + 2, p0.y + 0.5f * (row_height - size)),
                  ImGui::GetColorU32(ImGuiCol_Text), labels[i].c_str());
  }
}

}  // namespace sf::gui
