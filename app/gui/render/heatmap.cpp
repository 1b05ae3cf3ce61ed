#include "gui/render/heatmap.h"

#include "gui/text/glyphs.h"

#include "gui/render/gl.h"
#include <GLFW/glfw3.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>

#include "gui/render/gl_program.h"
#include "gui/text/text.h"

namespace sf::gui {

namespace {

// One program and one (empty) VAO shared by every heatmap; created on first use, with the GL context current.
struct HeatmapProgram {
  GLuint program = 0, vao = 0;
  GLint u_values = -1, u_min = -1, u_max = -1, u_colormap = -1, u_grid = -1, u_target_px = -1, u_window = -1;
};

HeatmapProgram& shared_program() {
  static HeatmapProgram p = [] {
    HeatmapProgram h;
    h.program = build_gl_program("heatmap.vert.glsl", "heatmap.frag.glsl");
    glGenVertexArrays(1, &h.vao);
    h.u_values = glGetUniformLocation(h.program, "u_values");
    h.u_min = glGetUniformLocation(h.program, "u_min");
    h.u_max = glGetUniformLocation(h.program, "u_max");
    h.u_colormap = glGetUniformLocation(h.program, "u_colormap");
    h.u_grid = glGetUniformLocation(h.program, "u_grid");
    h.u_target_px = glGetUniformLocation(h.program, "u_target_px");
    h.u_window = glGetUniformLocation(h.program, "u_window");
    return h;
  }();
  return p;
}

bool same_bits(const std::vector<float>& a, const float* b, size_t n) {
  return a.size() == n && (n == 0 || std::memcmp(a.data(), b, n * sizeof(float)) == 0);
}

}  // namespace

std::vector<HeatmapPlacement>& heatmap_placements() {
  static std::vector<HeatmapPlacement> placements;
  return placements;
}

Heatmap::~Heatmap() {
  // Textures die with the context at exit; deleting is only valid while a context is current.
  if (!glfwGetCurrentContext()) return;
  if (value_texture_) glDeleteTextures(1, &value_texture_);
}

void Heatmap::set_values(const float* values, int rows, int cols, float lo, float hi) {
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  if (rows != rows_ || cols != cols_ || !same_bits(values_, values, n)) {
    values_.assign(values, values + n);
    rows_ = rows;
    cols_ = cols;
    values_dirty_ = true;
  }
  lo_ = lo;
  hi_ = hi;
}

void Heatmap::set_axis_labels(const std::vector<std::string>& row_labels, const std::vector<std::string>& col_labels) {
  if (row_labels != row_labels_) row_labels_ = row_labels;
  if (col_labels != col_labels_) col_labels_ = col_labels;
  for (const auto* labels : {&row_labels_, &col_labels_})  // a token of any script: the font atlas must hold it
    for (const std::string& label : *labels) note_glyphs(label);
}

void Heatmap::upload_if_needed() {
  if (!values_dirty_) return;
  GLint last_texture = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &last_texture);
  if (!value_texture_) glGenTextures(1, &value_texture_);
  glBindTexture(GL_TEXTURE_2D, value_texture_);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, cols_, rows_, 0, GL_RED, GL_FLOAT, values_.data());
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(last_texture));
  values_dirty_ = false;
  ++uploads_;
}

namespace {

// What the draw-list callback needs to colour one heatmap: copied at draw() time, so that the values' range
// and the place are those of the frame being built. Kept until the next frame starts (heatmap_placements()
// is cleared then too), in a deque so that earlier entries stay where they are.
struct HeatmapDrawCall {
  GLuint value_texture = 0;
  float lo = 0, hi = 1;
  HeatmapStyle style;
  ImVec2 min, max;  // ImGui units, screen space
  HeatmapWindow window;
};

std::deque<HeatmapDrawCall>& frame_draw_calls() {
  static std::deque<HeatmapDrawCall> calls;
  return calls;
}

// Called by ImGui's OpenGL renderer where the heatmap sits in the draw order. Its viewport is the heatmap's
// rectangle in framebuffer pixels (GL counts y from the bottom); the scissor is the clip rectangle the
// callback was recorded under. The ImDrawCallback_ResetRenderState queued right after it restores ImGui's
// program, vertex array, viewport and blending.
void draw_heatmap_callback(const ImDrawList*, const ImDrawCmd* cmd) {
  const HeatmapDrawCall& call = *static_cast<const HeatmapDrawCall*>(cmd->UserCallbackData);
  const ImDrawData* frame = ImGui::GetDrawData();
  const ImVec2 origin = frame->DisplayPos, scale = frame->FramebufferScale;
  // Framebuffer pixels: the map's rectangle to the nearest pixel (as its placement, which the screen tests
  // sample); the clip rectangle rounded as the OpenGL 3 backend rounds its own, so that the map never draws
  // past what clips the widgets around it, at any framebuffer scale.
  const int fb_height = static_cast<int>(frame->DisplaySize.y * scale.y);
  const ImVec2 rect_min((call.min.x - origin.x) * scale.x, (call.min.y - origin.y) * scale.y);
  const ImVec2 rect_max((call.max.x - origin.x) * scale.x, (call.max.y - origin.y) * scale.y);
  const ImVec2 clip_min((cmd->ClipRect.x - origin.x) * scale.x, (cmd->ClipRect.y - origin.y) * scale.y);
  const ImVec2 clip_max((cmd->ClipRect.z - origin.x) * scale.x, (cmd->ClipRect.w - origin.y) * scale.y);
  if (rect_max.x <= rect_min.x || rect_max.y <= rect_min.y || clip_max.x <= clip_min.x || clip_max.y <= clip_min.y)
    return;
  const int x0 = static_cast<int>(std::lround(rect_min.x)), x1 = static_cast<int>(std::lround(rect_max.x));
  const int y_bottom = static_cast<int>(std::lround(fb_height - rect_max.y));
  const int y_top = static_cast<int>(std::lround(fb_height - rect_min.y));
  if (x1 <= x0 || y_top <= y_bottom) return;

  HeatmapProgram& p = shared_program();
  glViewport(x0, y_bottom, x1 - x0, y_top - y_bottom);
  glScissor(static_cast<int>(clip_min.x), static_cast<int>(fb_height - clip_max.y),
            static_cast<int>(clip_max.x - clip_min.x), static_cast<int>(clip_max.y - clip_min.y));
  glDisable(GL_BLEND);
  glUseProgram(p.program);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, call.value_texture);
  glUniform1i(p.u_values, 0);
  glUniform1f(p.u_min, call.lo);
  glUniform1f(p.u_max, call.hi);
  glUniform1i(p.u_colormap, static_cast<int>(call.style.colormap));
  glUniform1f(p.u_grid, call.style.grid ? 1.0f : 0.0f);
  glUniform2f(p.u_target_px, static_cast<float>(x1 - x0), static_cast<float>(y_top - y_bottom));
  glUniform4f(p.u_window, call.window.col0, call.window.row0, call.window.cols, call.window.rows);
  glBindVertexArray(p.vao);
  glDrawArrays(GL_TRIANGLES, 0, 3);
}

}  // namespace

void begin_heatmap_frame() {
  heatmap_placements().clear();
  frame_draw_calls().clear();
}

bool Heatmap::draw(const char* name, ImVec2 size, const HeatmapStyle& style, int* hovered_row, int* hovered_col,
                   HeatmapWindow window) {
  if (rows_ <= 0 || cols_ <= 0 || size.x < 1 || size.y < 1) {
    ImGui::Dummy(size);
    return false;
  }
  if (window.cols <= 0 || window.rows <= 0) window = {0, 0, static_cast<float>(cols_), static_cast<float>(rows_)};
  const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
  const ImVec2 top_left = ImGui::GetCursorScreenPos();
  const ImVec2 bottom_right(top_left.x + size.x, top_left.y + size.y);
  ImGui::Dummy(size);  // the item: layout, clipping and hovering as for an image
  // Without a GL context (the headless panel tests: ImGui without a window) it only lays out.
  if (glfwGetCurrentContext() && ImGui::IsItemVisible()) {
    upload_if_needed();
    frame_draw_calls().push_back({value_texture_, lo_, hi_, style, top_left, bottom_right, window});
    ImDrawList* draw_list = ImGui::GetWindowDrawList();
    draw_list->AddCallback(draw_heatmap_callback, &frame_draw_calls().back());
    draw_list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
  }
  heatmap_placements().push_back({name, ImVec2(top_left.x * scale.x, top_left.y * scale.y),
                                  ImVec2(bottom_right.x * scale.x, bottom_right.y * scale.y), rows_, cols_, lo_,
                                  hi_, this, window, style.colormap});

  if (!ImGui::IsItemHovered()) return false;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const int col = std::clamp(static_cast<int>(window.col0 + (mouse.x - top_left.x) / size.x * window.cols), 0, cols_ - 1);
  const int row = std::clamp(static_cast<int>(window.row0 + (mouse.y - top_left.y) / size.y * window.rows), 0, rows_ - 1);
  if (hovered_row) *hovered_row = row;
  if (hovered_col) *hovered_col = col;
  return true;
}

namespace {

// The numbers beside a colour bar: the top (hi), the middle and the bottom (lo) of the range.
struct BarLabels {
  char text[3][32];
  BarLabels(float lo, float hi) {
    std::snprintf(text[0], sizeof(text[0]), "%.3g", hi);
    std::snprintf(text[1], sizeof(text[1]), "%.3g", 0.5f * (lo + hi));
    std::snprintf(text[2], sizeof(text[2]), "%.3g", lo);
  }
};

float bar_part_width() { return ImGui::GetFontSize() * 1.2f; }

// A short bar's one-line range: "\u00b15.04" about 0, else "lo..hi".
std::string range_text(float lo, float hi) {
  char text[48];
  if (lo == -hi) std::snprintf(text, sizeof(text), "\u00b1%.3g", hi);
  else std::snprintf(text, sizeof(text), "%.3g..%.3g", lo, hi);
  return text;
}

}  // namespace

float colour_bar_width(float lo, float hi) {
  const BarLabels labels(lo, hi);
  float widest = 0;
  for (const char* t : labels.text) widest = std::max(widest, ImGui::CalcTextSize(t).x);
  widest = std::max(widest, ImGui::CalcTextSize(range_text(lo, hi).c_str()).x);  // a short bar's one line
  return bar_part_width() + ImGui::GetStyle().ItemInnerSpacing.x + widest;
}

void colour_bar(const char* label, float lo, float hi, ImVec2 size, Colormap map) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float bar_width = std::min(size.x * 0.35f, bar_part_width());
  const int steps = 64;
  for (int i = 0; i < steps; ++i) {
    // Top of the bar is the high end of the range.
    const Rgb c = colormap_rgb(map, 1.0f - (i + 0.5f) / steps);
    const float y0 = p0.y + size.y * i / steps, y1 = p0.y + size.y * (i + 1) / steps;
    draw->AddRectFilled(ImVec2(p0.x, y0), ImVec2(p0.x + bar_width, y1 + 0.5f), ImColor(c.r, c.g, c.b));
  }
  draw->AddRect(p0, ImVec2(p0.x + bar_width, p0.y + size.y), ImGui::GetColorU32(ImGuiCol_Border));
  const BarLabels labels(lo, hi);
  const float text_x = p0.x + bar_width + ImGui::GetStyle().ItemInnerSpacing.x;
  const ImU32 text_colour = ImGui::GetColorU32(ImGuiCol_Text);
  const float line = ImGui::GetFontSize();
  if (size.y >= 3.0f * line) {  // the top, the middle and the bottom of the range
    draw->AddText(ImVec2(text_x, p0.y), text_colour, labels.text[0]);
    draw->AddText(ImVec2(text_x, p0.y + 0.5f * (size.y - line)), text_colour, labels.text[1]);
    draw->AddText(ImVec2(text_x, p0.y + size.y - line), text_colour, labels.text[2]);
  } else {  // a bar as short as a strip: the range in one line ("+-5.04" about 0), in type that fits the bar
    const std::string text = range_text(lo, hi);
    const float size_px = std::min(line, std::max(10.0f, size.y));
    draw->AddText(ImGui::GetFont(), size_px, ImVec2(text_x, p0.y + 0.5f * (size.y - size_px)), text_colour, text.c_str());
  }
  ImGui::Dummy(size);
  if (ImGui::IsItemHovered() && label && *label)
    ImGui::SetTooltip("%s", tr(T::heatmap_colour_bar_tip,
                               {{"label", label}, {"lo", number_text("%.4g", lo)}, {"hi", number_text("%.4g", hi)}})
                                .c_str());
}

}  // namespace sf::gui
