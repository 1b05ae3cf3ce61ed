#include "gui/panels/attention_lines_panel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gui/render/item_placements.h"
#include "gui/text/text.h"

namespace sf::gui {

std::vector<AttentionLine> attention_lines(const AttentionTrace& a, const std::vector<bool>& heads_shown,
                                           float min_weight) {
  std::vector<AttentionLine> lines;
  for (size_t h = 0; h < a.probs.size() && h < heads_shown.size(); ++h) {
    if (!heads_shown[h]) continue;
    const Mat& p = a.probs[h];
    for (Eigen::Index i = 0; i < p.rows(); ++i)
      for (Eigen::Index j = 0; j < p.cols(); ++j)
        if (p(i, j) >= min_weight)
          lines.push_back({static_cast<int>(h), static_cast<int>(i), static_cast<int>(j), p(i, j)});
  }
  return lines;
}

ImU32 head_colour(int head, int heads, float alpha) {
  float r = 0, g = 0, b = 0;
  ImGui::ColorConvertHSVtoRGB(static_cast<float>(head) / std::max(heads, 1), 0.65f, 1.0f, r, g, b);
  return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, alpha));  // (no ImGui context needed: tests call it)
}

void AttentionLinesPanel::show_only(int head, int heads) {
  shown_.assign(static_cast<size_t>(std::max(heads, 1)), false);
  if (head >= 0 && head < heads) shown_[static_cast<size_t>(head)] = true;
  shown_for_head_ = head;
}

void AttentionLinesPanel::draw(const AttentionTrace& a, const std::vector<std::string>& queries,
                               const std::vector<std::string>& keys, TokenSide query_side, TokenSide key_side,
                               int selected_head, ImVec2 size) {
  const int H = static_cast<int>(a.probs.size());
  if (H == 0 || size.x < 50 || size.y < 50) return;
  if (static_cast<int>(shown_.size()) != H || shown_for_head_ != selected_head) show_only(selected_head, H);
  const float font = ImGui::GetFontSize();
  const ImGuiStyle& style = ImGui::GetStyle();
  const float top = ImGui::GetCursorScreenPos().y;

  // The heads' colours: click to show or hide a head.
  ImGui::TextUnformatted(tr(T::attention_lines_heads_hint));
  const float swatch = ImGui::GetFrameHeight();
  for (int h = 0; h < H; ++h) {
    same_line_if_fits(swatch * 1.6f);
    ImGui::PushID(h);
    const bool on = shown_[static_cast<size_t>(h)];
    const ImVec2 p = ImGui::GetCursorScreenPos();
    if (ImGui::InvisibleButton("head", ImVec2(swatch * 1.5f, swatch))) {
      shown_[static_cast<size_t>(h)] = !on;
      if (std::none_of(shown_.begin(), shown_.end(), [](bool s) { return s; })) shown_[static_cast<size_t>(h)] = true;
    }
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "%s",
          tr(on ? T::attention_lines_head_shown : T::attention_lines_head_hidden, {{"head", shown_number(h)}}).c_str());
    ImDrawList* d = ImGui::GetWindowDrawList();
    d->AddRectFilled(p, ImVec2(p.x + swatch * 1.5f, p.y + swatch), head_colour(h, H, on ? 1.0f : 0.18f), 3.0f);
    if (on) d->AddRect(p, ImVec2(p.x + swatch * 1.5f, p.y + swatch), IM_COL32(255, 255, 255, 255), 3.0f, 0, 2.0f);
    char label[16];
    std::snprintf(label, sizeof(label), "%d", shown_number(h));
    d->AddText(ImVec2(p.x + 0.4f * swatch, p.y + style.FramePadding.y), on ? IM_COL32(0, 0, 0, 255) : IM_COL32(200, 200, 200, 255), label);
    record_item("lines.head", p, ImVec2(p.x + swatch * 1.5f, p.y + swatch), h, on ? "on" : "off");
    ImGui::PopID();
  }

  // The two columns of tokens, one row each; a row never lower than a readable label: the region scrolls.
  const float rows = static_cast<float>(std::max(queries.size(), keys.size()));
  const float avail_h = std::max(4.0f * font, size.y - (ImGui::GetCursorScreenPos().y - top));  // (below the heads)
  const float pitch = std::clamp(avail_h / std::max(rows, 1.0f), std::max(10.0f, 0.6f * font), 2.6f * font);
  const float text_size = std::min(font, pitch);
  ImGui::BeginChild("lines", ImVec2(size.x, avail_h), false, ImGuiWindowFlags_HorizontalScrollbar);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  float left_w = 0, right_w = 0;
  for (const auto& s : queries) left_w = std::max(left_w, ImGui::CalcTextSize(s.c_str()).x * text_size / font);
  for (const auto& s : keys) right_w = std::max(right_w, ImGui::CalcTextSize(s.c_str()).x * text_size / font);
  const float width = ImGui::GetContentRegionAvail().x;
  // Lines as long as they are high at most (steep enough to follow), the pair centred in the panel.
  const float gap = std::clamp(std::min(width - left_w - right_w - 2 * font, 0.9f * rows * pitch), 4 * font,
                               std::max(4 * font, width - left_w - right_w - 2 * font));
  const float x_left = origin.x + std::max(0.0f, 0.5f * (width - gap - left_w - right_w)) + left_w + 0.5f * font;
  const float x_right = x_left + gap;
  const auto y_of = [&](int i, int n) {
    // Both columns centred on the same height: a short column sits in the middle of a long one.
    return origin.y + (i + 0.5f) * pitch + 0.5f * (rows - static_cast<float>(n)) * pitch;
  };

  // Which token the pointer is on (this frame), or one hovered in another view: only its lines then.
  int focus_query = -1, focus_key = -1;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool window_hovered = ImGui::IsWindowHovered();
  for (int i = 0; i < static_cast<int>(queries.size()); ++i) {
    const float y = y_of(i, static_cast<int>(queries.size()));
    if (window_hovered && mouse.x >= origin.x && mouse.x < x_left && std::abs(mouse.y - y) < 0.5f * pitch) focus_query = i;
  }
  for (int j = 0; j < static_cast<int>(keys.size()); ++j) {
    const float y = y_of(j, static_cast<int>(keys.size()));
    if (window_hovered && mouse.x > x_right && std::abs(mouse.y - y) < 0.5f * pitch) focus_key = j;
  }
  if (focus_query < 0 && focus_key < 0) {
    for (int i = 0; i < static_cast<int>(queries.size()); ++i)
      if (is_hovered_token(query_side, i, TokenRole::Query)) focus_query = i;
    if (focus_query < 0)
      for (int j = 0; j < static_cast<int>(keys.size()); ++j)
        if (is_hovered_token(key_side, j, TokenRole::Key)) focus_key = j;
  }
  if (focus_query >= 0) report_hovered_query(query_side, focus_query);
  if (focus_key >= 0) report_hovered_key(key_side, focus_key);

  // The lines, faint first, so that strong ones lie on top.
  std::vector<AttentionLine> lines = attention_lines(a, shown_);
  std::stable_sort(lines.begin(), lines.end(), [](const AttentionLine& x, const AttentionLine& y) { return x.weight < y.weight; });
  const float thickness = std::clamp(0.12f * pitch, 1.5f, 4.0f);
  for (const AttentionLine& l : lines) {
    if (focus_query >= 0 && l.query != focus_query) continue;
    if (focus_key >= 0 && l.key != focus_key) continue;
    draw->AddLine(ImVec2(x_left, y_of(l.query, static_cast<int>(queries.size()))),
                  ImVec2(x_right, y_of(l.key, static_cast<int>(keys.size()))), head_colour(l.head, H, l.weight),
                  thickness);
  }
  // The tokens over the line ends.
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  for (int i = 0; i < static_cast<int>(queries.size()); ++i) {
    const float y = y_of(i, static_cast<int>(queries.size()));
    const float w = ImGui::CalcTextSize(queries[static_cast<size_t>(i)].c_str()).x * text_size / font;
    const ImVec2 p0(x_left - 0.25f * font - w, y - 0.5f * text_size);
    if (i == focus_query) draw->AddRectFilled(ImVec2(p0.x - 2, p0.y), ImVec2(x_left, p0.y + text_size), kHoverColour, 3.0f);
    draw->AddText(ImGui::GetFont(), text_size, p0, text, queries[static_cast<size_t>(i)].c_str());
    record_item("lines.query", p0, ImVec2(x_left, p0.y + text_size), i, queries[static_cast<size_t>(i)]);
  }
  for (int j = 0; j < static_cast<int>(keys.size()); ++j) {
    const float y = y_of(j, static_cast<int>(keys.size()));
    const float w = ImGui::CalcTextSize(keys[static_cast<size_t>(j)].c_str()).x * text_size / font;
    const ImVec2 p0(x_right + 0.25f * font, y - 0.5f * text_size);
    if (j == focus_key) draw->AddRectFilled(ImVec2(x_right, p0.y), ImVec2(p0.x + w + 2, p0.y + text_size), kHoverColour, 3.0f);
    draw->AddText(ImGui::GetFont(), text_size, p0, text, keys[static_cast<size_t>(j)].c_str());
    record_item("lines.key", ImVec2(x_right, p0.y), ImVec2(p0.x + w, p0.y + text_size), j, keys[static_cast<size_t>(j)]);
  }
  // (the picture's room and its row pitch: a presented screen's check that the rows fill the height they have)
  record_item("main_lines", origin, ImVec2(origin.x + width, origin.y + avail_h), -1, "lines", pitch);
  ImGui::Dummy(ImVec2(x_right - origin.x + right_w + font, rows * pitch));
  ImGui::EndChild();
}

}  // namespace sf::gui
