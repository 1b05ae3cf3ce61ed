#include "gui/render/map_view.h"

#include "gui/text/glyphs.h"

#include <GLFW/glfw3.h>
#include <imgui_internal.h>  // SetItemUsingMouseWheel: the wheel zooms the map instead of scrolling the panel

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gui/render/item_placements.h"
#include "gui/text/text.h"

namespace sf::gui {

namespace {

constexpr float kMaxZoom = 64.0f;
constexpr float kZoomStep = 1.25f;

// What hovering label i of an axis says: its tip, else the label itself.
const std::string& tip_of(const MapAxis& axis, int i) {
  return axis.tips && i < static_cast<int>(axis.tips->size()) ? (*axis.tips)[static_cast<size_t>(i)]
                                                              : (*axis.labels)[static_cast<size_t>(i)];
}

float widest(const std::vector<std::string>& labels) {
  float w = 0;
  for (const auto& s : labels) w = std::max(w, ImGui::CalcTextSize(s.c_str()).x);
  return w;
}

}  // namespace

float MapView::label_width_for(const std::vector<std::string>& labels) {
  return widest(labels) + ImGui::GetStyle().ItemSpacing.x;
}

float MapView::min_label_size() { return std::max(10.0f, 0.5f * ImGui::GetFontSize()); }

float MapView::widest_label(const std::vector<std::string>& labels) { return widest(labels); }

float MapView::column_label_room(float longest_label, float cell) {
  if (cell < min_label_size() - 0.5f) return 0.0f;
  const float font = ImGui::GetFontSize();
  return std::min(longest_label * std::min(1.0f, cell / font), 5.0f * font) + ImGui::GetStyle().ItemSpacing.y;
}

MapView::PresentedFit MapView::fit_presented(int rows, int cols, float row_label_width, float col_label_width,
                                             ImVec2 room, float bar_width) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const float font = ImGui::GetFontSize(), min_label = min_label_size();
  rows = std::max(1, rows);
  cols = std::max(1, cols);
  const auto key_room = [&](float size) { return col_label_width * size / font + style.ItemSpacing.y + 4; };
  const auto label_w = [&](float size) { return row_label_width * size / font + style.ItemSpacing.x + 4; };
  PresentedFit f;
  float cell = std::min({font * 3, 0.75f * room.y / rows, (room.x - label_w(min_label) - bar_width) / cols});
  cell = std::max(1.0f, cell);
  if (key_room(min_label) + cell * rows > room.y) cell = std::max(1.0f, (room.y - key_room(min_label)) / rows);
  float size = std::clamp((room.y - cell * rows - style.ItemSpacing.y - 4) * font / std::max(1.0f, col_label_width),
                          min_label, std::max(min_label, std::min(font, cell)));
  if (label_w(size) + cell * cols + bar_width > room.x) size = min_label;  // (the width decides)
  f.zooms = cell < min_label;
  if (f.zooms) size = min_label;
  f.cell = cell;
  f.label_size = size;
  f.label_width = label_w(size);
  f.top_room = key_room(size);
  // (zoomed, the cells are half the body text: as many columns in view as the width holds at that size)
  f.size = f.zooms ? ImVec2(std::min(room.x, f.label_width + min_label * cols + bar_width), room.y)
                   : ImVec2(f.label_width + cell * cols + bar_width, f.top_room + cell * rows);
  return f;
}

void MapView::set_zoom(float zoom, float row, float col) {
  zoom_ = std::clamp(zoom, 1.0f, kMaxZoom);
  user_zoomed_ = zoom_ > 1.001f;
  pending_row_ = row;
  pending_col_ = col;
  zoom_requested_ = true;
}

void MapView::clamp_window(int rows, int cols) {
  first_col_ = std::clamp(first_col_, 0.0f, std::max(0.0f, cols - window_.cols));
  first_row_ = std::clamp(first_row_, 0.0f, std::max(0.0f, rows - window_.rows));
  window_.col0 = first_col_;
  window_.row0 = first_row_;
}

MapViewHit MapView::draw(const char* name, ImVec2 size, const MapAxis& rows, const MapAxis& cols,
                               const MapViewOptions& o) {
  for (const MapAxis* axis : {&rows, &cols})  // tokens of any script, and their tips: the font atlas must hold them
    for (const auto* list : {axis->labels, axis->tips})
      if (list)
        for (const std::string& text : *list) note_glyphs(text);
  MapViewHit hit;
  const int R = map_.rows(), C = map_.cols();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  if (R != last_rows_ || C != last_cols_) {  // another sentence, another head's shape: the whole map again
    if (last_rows_ >= 0) fit();
    last_rows_ = R;
    last_cols_ = C;
  }
  if (R <= 0 || C <= 0 || size.x < 8 || size.y < 8) {
    ImGui::Dummy(ImVec2(std::max(size.x, 1.0f), std::max(size.y, 1.0f)));
    return hit;
  }
  const ImGuiStyle& style = ImGui::GetStyle();
  const float font = ImGui::GetFontSize(), min_label = min_label_size();
  float label_w = rows.labels ? (o.label_width >= 0 ? o.label_width : label_width_for(*rows.labels)) : 0.0f;
  // Rows too low for their labels (and no zooming in for them): the label column narrows to the hint's and
  // the hovered label's room, and the map takes the rest.
  if (rows.labels && !o.always_label && !o.square_cells &&
      std::max(1.0f, size.y) / map_.rows() * zoom_ < min_label - 0.5f)
    label_w = std::min(label_w, 4.0f * font);
  const float bar_w = o.colour_bar ? colour_bar_width(map_.lo(), map_.hi()) + style.ItemSpacing.x : 0.0f;

  // The cells at zoom 1 without the column labels' room, then that room (a label is drawn at most a cell wide,
  // rotated: its length shrinks with the cell; at most five lines of text high), then the cells again.
  const float room_x = std::max(8.0f, size.x - label_w - bar_w);
  const auto cells_for = [&](float room_y, float* cw, float* ch) {
    *cw = room_x / C;
    *ch = std::max(1.0f, room_y) / R;
    if (o.square_cells) *cw = *ch = std::min(*cw, *ch);
  };
  float cw0 = 0, ch0 = 0;
  cells_for(size.y, &cw0, &ch0);
  // (from the cells at zoom 1: zooming in must not take height from the rows; labels then fit the room)
  // (always_label: the columns keep their labels too, at least half the body text, however small the cells)
  float top_room = !cols.labels ? 0.0f : o.top_room >= 0 ? o.top_room
                                       : column_label_room(widest(*cols.labels), o.always_label ? std::max(cw0, min_label) : cw0);
  // A stretched map (cells not square) whose column labels would take more than 40% of its height would be
  // squashed to a strip under them (a small step map in a short column): the map keeps the height and the
  // labels go; hovering still names the column.
  if (!o.square_cells && o.top_room < 0 && top_room > 0.4f * size.y) top_room = 0;
  cells_for(size.y - top_room, &cw0, &ch0);

  // Presentation mode: never fewer pixels per row than a readable label.
  // (a row up to half a pixel under the size, a caller's fit to the pixel, is not worth a scrolling map: its
  // labels are drawn, as `readable` below decides)
  min_zoom_ = o.always_label && rows.labels && ch0 < min_label - 0.5f ? std::min(min_label / ch0, kMaxZoom) : 1.0f;
  // A zoom the user chose holds (never below the least); else the map follows the least as the room changes
  // (a caption of another height: once raised by a short frame, the zoom would stay, with a minimap, for good).
  zoom_ = user_zoomed_ ? std::clamp(zoom_, min_zoom_, kMaxZoom) : min_zoom_;
  const float cw = cw0 * zoom_, ch = ch0 * zoom_;
  const ImVec2 map_size(std::min(room_x, cw * C), std::min(std::max(1.0f, size.y - top_room), ch * R));
  window_.cols = map_size.x / cw;
  window_.rows = map_size.y / ch;
  if (pending_row_ >= 0 || pending_col_ >= 0) {  // bring the asked-for cell to the middle of the window
    if (pending_row_ >= 0) first_row_ = pending_row_ + 0.5f - window_.rows / 2;
    if (pending_col_ >= 0) first_col_ = pending_col_ + 0.5f - window_.cols / 2;
    pending_row_ = pending_col_ = -1;
  }
  clamp_window(R, C);
  const ImVec2 map_pos(origin.x + label_w, origin.y + top_room);
  const ImVec2 map_end(map_pos.x + map_size.x, map_pos.y + map_size.y);
  const auto row_y = [&](float i) { return map_pos.y + (i - first_row_) * ch; };
  const auto col_x = [&](float j) { return map_pos.x + (j - first_col_) * cw; };
  const int row_begin = static_cast<int>(std::floor(first_row_)), row_end = std::min(R, static_cast<int>(std::ceil(first_row_ + window_.rows)));
  const int col_begin = static_cast<int>(std::floor(first_col_)), col_end = std::min(C, static_cast<int>(std::ceil(first_col_ + window_.cols)));

  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);

  // The map, and the pointer on it.
  // The pointer is an invisible button over the map: it stays the active item through a drag and its release.
  ImGui::SetCursorScreenPos(map_pos);
  map_.draw(name, map_size, o.style, nullptr, nullptr, window_);
  ImGui::SetCursorScreenPos(map_pos);
  ImGui::PushID(name);
  ImGui::InvisibleButton("##pointer", map_size);
  ImGui::PopID();
  ImGui::SetItemUsingMouseWheel();
  const ImGuiIO& io = ImGui::GetIO();
  const bool over_map = ImGui::IsItemHovered();
  if (over_map) {
    hit.hovered = true;
    hit.col = std::clamp(static_cast<int>(first_col_ + (io.MousePos.x - map_pos.x) / cw), 0, C - 1);
    hit.row = std::clamp(static_cast<int>(first_row_ + (io.MousePos.y - map_pos.y) / ch), 0, R - 1);
    // Zoom about the pointer: the cell under it stays under it.
    float factor = 1.0f;
    if (io.MouseWheel != 0) factor = std::pow(kZoomStep, io.MouseWheel);
    if (!io.KeyCtrl && (ImGui::IsKeyPressed(GLFW_KEY_EQUAL) || ImGui::IsKeyPressed(GLFW_KEY_KP_ADD))) factor = kZoomStep;
    if (!io.KeyCtrl && (ImGui::IsKeyPressed(GLFW_KEY_MINUS) || ImGui::IsKeyPressed(GLFW_KEY_KP_SUBTRACT))) factor = 1 / kZoomStep;
    if (!io.KeyCtrl && (ImGui::IsKeyPressed(GLFW_KEY_0) || ImGui::IsKeyPressed(GLFW_KEY_KP_0))) factor = min_zoom_ / zoom_;
    if (factor != 1.0f) {
      const float under_col = first_col_ + (io.MousePos.x - map_pos.x) / cw;
      const float under_row = first_row_ + (io.MousePos.y - map_pos.y) / ch;
      const float z = std::clamp(zoom_ * factor, min_zoom_, kMaxZoom);
      first_col_ = under_col - (io.MousePos.x - map_pos.x) / (cw0 * z);
      first_row_ = under_row - (io.MousePos.y - map_pos.y) / (ch0 * z);
      zoom_ = z;
      user_zoomed_ = z > min_zoom_ * 1.001f;
    }
    if (ImGui::IsItemActivated()) {
      dragging_ = false;
      drag_from_ = io.MousePos;
      drag_col_ = first_col_;
      drag_row_ = first_row_;
    }
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDown(0)) {
    const ImVec2 d(io.MousePos.x - drag_from_.x, io.MousePos.y - drag_from_.y);
    if (std::abs(d.x) + std::abs(d.y) > 3.0f) dragging_ = true;
    if (dragging_ && zoom_ > 1.0f) {  // the map follows the pointer
      first_col_ = drag_col_ - d.x / cw;
      first_row_ = drag_row_ - d.y / ch;
    }
  }
  if (ImGui::IsItemDeactivated()) {
    if (!dragging_ && over_map) hit.clicked = true;
    dragging_ = false;
  }
  clamp_window(R, C);

  // What the pointer on this map says to the other views: a cell of two token axes is a query and a key; a row
  // of a token axis its token in the axis' role.
  const auto report_row = [&](int i) {
    if (rows.role == TokenRole::Query) report_hovered_query(rows.side, i);
    else if (rows.role == TokenRole::Key) report_hovered_key(rows.side, i);
    else report_hovered_token(rows.side, i);
  };
  const auto report_col = [&](int j) {
    if (cols.role == TokenRole::Query) report_hovered_query(cols.side, j);
    else if (cols.role == TokenRole::Key) report_hovered_key(cols.side, j);
    else report_hovered_token(cols.side, j);
  };
  // Row labels: each visible row's, once a row can hold one; smaller, only the hovered row's, on a box.
  const TokenSide row_side = rows.side, col_side = cols.side;
  int hovered_row_token = -1;
  if (rows.tokens)
    for (int i = row_begin; i < row_end; ++i)
      if (is_hovered_token(row_side, i, rows.role)) hovered_row_token = i;
  if (rows.labels) {
    draw->PushClipRect(ImVec2(origin.x, map_pos.y), ImVec2(map_pos.x, map_end.y), true);
    // A label is at most a row high, and small enough for the widest to fit the label column.
    const float widest_label = std::max(1.0f, widest(*rows.labels));
    const float size_px = std::min({o.label_size > 0 ? o.label_size : font, o.label_size > 0 ? std::max(ch, o.label_size) : ch,
                                     font * (label_w - 4) / widest_label});
    const bool readable = ch >= min_label - 0.5f && size_px >= 0.8f * min_label;  // (half a pixel of float rounding in a fit)
    for (int i = row_begin; i < row_end && i < static_cast<int>(rows.labels->size()); ++i) {
      const ImVec2 p0(origin.x, row_y(static_cast<float>(i))), p1(map_pos.x - 2, row_y(static_cast<float>(i + 1)));
      const bool lit = hit.hovered ? i == hit.row : i == hovered_row_token;
      if (lit) draw->AddRectFilled(p0, p1, kHoverColour, 3.0f);
      if (ImGui::IsMouseHoveringRect(p0, p1) && ImGui::IsWindowHovered() && p0.y >= map_pos.y - 1 && p1.y <= map_end.y + 1) {
        if (rows.tokens) report_row(i);
        ImGui::SetTooltip("%s", tip_of(rows, i).c_str());
      }
      if (readable) {
        draw->AddText(ImGui::GetFont(), size_px, ImVec2(origin.x + 2, p0.y + 0.5f * (ch - size_px)), text,
                      (*rows.labels)[static_cast<size_t>(i)].c_str());
        if (p0.y >= map_pos.y - 1 && p1.y <= map_end.y + 1)  // wholly in view: for the tests and lessons
          record_item(std::string(name) + ".row", p0, p1, i, (*rows.labels)[static_cast<size_t>(i)], size_px);
      }
    }
    draw->PopClipRect();
    if (!readable && map_size.y >= 8 * font) {  // rows too low for their labels: say how to get them
      const char* hint = tr(T::map_view_too_many_rows);
      draw->AddText(ImGui::GetFont(), min_label, ImVec2(origin.x + 2, map_pos.y), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                    hint, nullptr, label_w - 4);
    }
    const int shown = hit.hovered ? hit.row : hovered_row_token;
    if (!readable && shown >= 0 && shown < static_cast<int>(rows.labels->size())) {
      const float centre = row_y(shown + 0.5f);
      draw->AddRectFilled(ImVec2(origin.x, centre - 0.5f * min_label), ImVec2(map_pos.x - 2, centre + 0.5f * min_label),
                          kHoverColour, 3.0f);
      draw->AddText(ImGui::GetFont(), min_label, ImVec2(origin.x + 2, centre - 0.5f * min_label), text,
                    (*rows.labels)[static_cast<size_t>(shown)].c_str());
    }
  }

  // Column labels, rotated to read bottom to top, each at most a cell wide and as long as the room above.
  if (cols.labels && top_room > 0) {
    // (a rotated glyph's line height runs sideways: half a cell of slack past the last column)
    draw->PushClipRect(ImVec2(map_pos.x, origin.y), ImVec2(map_end.x + 0.5f * cw, map_pos.y), true);
    for (int j = col_begin; j < col_end && j < static_cast<int>(cols.labels->size()); ++j) {
      const char* label = (*cols.labels)[static_cast<size_t>(j)].c_str();
      const ImVec2 c0(col_x(static_cast<float>(j)), origin.y), c1(col_x(static_cast<float>(j + 1)), map_pos.y);
      const bool lit = (hit.hovered && j == hit.col) || (!hit.hovered && cols.tokens && is_hovered_token(col_side, j, cols.role));
      if (lit) draw->AddRectFilled(c0, c1, kHoverColour, 3.0f);
      if (lit && c0.x >= map_pos.x - 1 && c1.x <= map_end.x + 1)  // for the tests: which column's label is lit
        record_item(std::string(name) + ".col_lit", c0, c1, j, label);
      if (ImGui::IsMouseHoveringRect(c0, c1) && ImGui::IsWindowHovered()) {
        if (cols.tokens) report_col(j);
        ImGui::SetTooltip("%s", tip_of(cols, j).c_str());
      }
      const float length = std::max(1.0f, ImGui::CalcTextSize(label).x);
      const float size_px = std::min({o.label_size > 0 ? o.label_size : font, o.label_size > 0 ? std::max(cw, o.label_size) : cw,
                                       font * (top_room - style.ItemSpacing.y) / length});
      if (size_px >= min_label * 0.8f) {
        rotated_text(draw, ImVec2(col_x(j + 0.5f) - size_px * 0.5f, map_pos.y - 4), text, label, 1.5707964f, size_px);
        if (c0.x >= map_pos.x - 1 && c1.x <= map_end.x + 1)  // wholly in view: for the tests and lessons
          record_item(std::string(name) + ".col", ImVec2(c0.x, map_pos.y - 4 - length * size_px / font), c1, j, label,
                      size_px);
      }
    }
    draw->PopClipRect();
  }

  // Zoomed in so that every row shown keeps its label: the corner above the row labels says what is in view.
  if (o.always_label && min_zoom_ > 1.001f && rows.labels) {
    std::string note;
    const int first_row = static_cast<int>(first_row_) + 1, last_row = std::min(R, static_cast<int>(first_row_ + window_.rows));
    const int first_col = static_cast<int>(first_col_) + 1, last_col = std::min(C, static_cast<int>(first_col_ + window_.cols));
    if (last_col - first_col + 1 < C)
      note = tr(T::map_view_zoomed_rows_columns, {{"first_row", first_row},
                                                  {"last_row", last_row},
                                                  {"rows", R},
                                                  {"first_column", first_col},
                                                  {"last_column", last_col},
                                                  {"columns", C}});
    else
      note = tr(T::map_view_zoomed_rows, {{"first_row", first_row}, {"last_row", last_row}, {"rows", R}});
    const ImVec2 corner0 = origin, corner1(map_pos.x - 4, map_pos.y - 2);
    if (corner1.x - corner0.x > 2 * min_label && corner1.y - corner0.y > min_label) {
      draw->PushClipRect(corner0, corner1, true);
      draw->AddText(ImGui::GetFont(), min_label, corner0, ImGui::GetColorU32(ImGuiCol_TextDisabled), note.c_str(),
                    nullptr, corner1.x - corner0.x);
      draw->PopClipRect();
    }
    record_item(std::string(name) + ".zoom_note", corner0, corner1, -1, note, zoom_);
  }

  // The hovered cell's row and column, outlined (not the row's token again as a column); else the rows and
  // columns of a token hovered elsewhere.
  draw->PushClipRect(map_pos, map_end, true);
  const auto outline_row = [&](int i) {
    draw->AddRect(ImVec2(map_pos.x, row_y(static_cast<float>(i))), ImVec2(map_end.x, row_y(static_cast<float>(i + 1))),
                  kHoverColour, 0, 0, 3.0f);
  };
  const auto outline_col = [&](int j) {
    draw->AddRect(ImVec2(col_x(static_cast<float>(j)), map_pos.y), ImVec2(col_x(static_cast<float>(j + 1)), map_end.y),
                  kHoverColour, 0, 0, 3.0f);
  };
  if (hit.hovered) {
    outline_row(hit.row);
    outline_col(hit.col);
    if (rows.tokens && cols.tokens) report_hovered_cell(row_side, hit.row, col_side, hit.col);
    else if (rows.tokens) report_row(hit.row);
    else if (cols.tokens) report_col(hit.col);
  } else {
    if (hovered_row_token >= 0) outline_row(hovered_row_token);
    if (cols.tokens)
      for (int j = col_begin; j < col_end; ++j)
        if (is_hovered_token(col_side, j, cols.role)) outline_col(j);
  }
  // The marked cell (an opened computation): its row and column thin, the cell itself thick, in white.
  if (o.marked.row >= 0 && o.marked.row < R && o.marked.col >= 0 && o.marked.col < C) {
    const ImU32 white = IM_COL32(255, 255, 255, 255);
    const float i = static_cast<float>(o.marked.row), j = static_cast<float>(o.marked.col);
    draw->AddRect(ImVec2(map_pos.x, row_y(i)), ImVec2(map_end.x, row_y(i + 1)), white, 0, 0, 1.5f);
    draw->AddRect(ImVec2(col_x(j), map_pos.y), ImVec2(col_x(j + 1), map_end.y), white, 0, 0, 1.5f);
    draw->AddRect(ImVec2(col_x(j) - 2, row_y(i) - 2), ImVec2(col_x(j + 1) + 2, row_y(i + 1) + 2), white, 0, 0, 4.0f);
    record_item(std::string(name) + ".marked_row", ImVec2(map_pos.x, row_y(i)), ImVec2(map_end.x, row_y(i + 1)), o.marked.row);
    record_item(std::string(name) + ".marked_col", ImVec2(col_x(j), map_pos.y), ImVec2(col_x(j + 1), map_end.y), o.marked.col);
  }
  // Where the outlined row and column are, for the tests (the pointer's cell, or the hover of another view).
  {
    const int out_row = hit.hovered ? hit.row : hovered_row_token;
    int out_col = hit.hovered ? hit.col : -1;
    if (!hit.hovered && cols.tokens)
      for (int j = col_begin; j < col_end; ++j)
        if (is_hovered_token(col_side, j, cols.role)) out_col = j;
    if (out_row >= 0)
      record_item(std::string(name) + ".outlined_row", ImVec2(map_pos.x, row_y(static_cast<float>(out_row))),
                  ImVec2(map_end.x, row_y(out_row + 1.0f)), out_row);
    if (out_col >= 0)
      record_item(std::string(name) + ".outlined_col", ImVec2(col_x(static_cast<float>(out_col)), map_pos.y),
                  ImVec2(col_x(out_col + 1.0f), map_end.y), out_col);
  }
  draw->PopClipRect();
  const char* value_name = o.value_name ? o.value_name : tr(T::map_value_value);
  if (hit.hovered && o.tooltip) {
    const auto label = [](const MapAxis& a, int i) {
      return a.labels && i < static_cast<int>(a.labels->size()) ? "\"" + (*a.labels)[static_cast<size_t>(i)] + "\""
                                                                 : std::to_string(i);
    };
    ImGui::SetTooltip("%s", tr(T::map_view_cell_tip, {{"row", hit.row},
                                                      {"row_label", label(rows, hit.row)},
                                                      {"column", hit.col},
                                                      {"column_label", label(cols, hit.col)},
                                                      {"name", value_name},
                                                      {"value", number_text("%.4g", map_.value(hit.row, hit.col))}})
                                .c_str());
  }

  // The colour bar, and below it while zoomed the whole map with the window marked.
  if (o.colour_bar) {
    const float inner = bar_w - style.ItemSpacing.x;
    const bool zoomed = zoom_ > 1.001f;
    const float mini_h = zoomed ? std::clamp(inner * R / C, 2.0f * font, 0.45f * map_size.y) : 0.0f;
    // (a strip's bar as high as the strip, its one line of range in type that fits it: never below the map)
    const float bar_h = std::max(min_label, map_size.y - (zoomed ? mini_h + style.ItemSpacing.y : 0.0f));
    ImGui::SetCursorScreenPos(ImVec2(map_end.x + style.ItemSpacing.x, map_pos.y));
    colour_bar(value_name, map_.lo(), map_.hi(), ImVec2(inner, bar_h), o.style.colormap);
    if (zoomed) {
      const ImVec2 m0(map_end.x + style.ItemSpacing.x, map_pos.y + bar_h + style.ItemSpacing.y);
      const float mini_w = std::min(inner, mini_h * C / R);
      ImGui::SetCursorScreenPos(m0);
      const std::string mini = std::string("minimap:") + name;
      map_.draw(mini.c_str(), ImVec2(mini_w, mini_h), HeatmapStyle{o.style.colormap, false});
      const float sx = mini_w / C, sy = mini_h / R;
      draw->AddRect(ImVec2(m0.x + first_col_ * sx, m0.y + first_row_ * sy),
                    ImVec2(m0.x + (first_col_ + window_.cols) * sx, m0.y + (first_row_ + window_.rows) * sy),
                    IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
      record_item("minimap", m0, ImVec2(m0.x + mini_w, m0.y + mini_h), -1, name, zoom_);
    }
  }
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(size);
  zoom_requested_ = false;
  return hit;
}

}  // namespace sf::gui
