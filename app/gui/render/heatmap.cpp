#include "gui/render/heatmap.h"

#include <GL/gl.h>
#include <GL/glext.h>
#include <GLFW/glfw3.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "gui/render/gl_program.h"

namespace sf::gui {

namespace {

// One program and one (empty) VAO shared by every heatmap; created on first use, with the GL context current.
struct HeatmapProgram {
  GLuint program = 0, vao = 0;
  GLint u_values = -1, u_min = -1, u_max = -1, u_colormap = -1, u_grid = -1, u_target_px = -1;
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
  if (colour_texture_) glDeleteTextures(1, &colour_texture_);
  if (framebuffer_) glDeleteFramebuffers(1, &framebuffer_);
}

void Heatmap::set_values(const float* values, int rows, int cols, float lo, float hi) {
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  if (rows != rows_ || cols != cols_ || !same_bits(values_, values, n)) {
    values_.assign(values, values + n);
    rows_ = rows;
    cols_ = cols;
    values_dirty_ = true;
    colour_dirty_ = true;
  }
  if (lo != lo_ || hi != hi_) {
    lo_ = lo;
    hi_ = hi;
    colour_dirty_ = true;
  }
}

void Heatmap::set_axis_labels(const std::vector<std::string>& row_labels, const std::vector<std::string>& col_labels) {
  if (row_labels != row_labels_) row_labels_ = row_labels;
  if (col_labels != col_labels_) col_labels_ = col_labels;
}

void Heatmap::render_to_texture(int width_px, int height_px, const HeatmapStyle& style) {
  HeatmapProgram& p = shared_program();
  // Save what ImGui's backend does not reset itself (before binding anything), render, restore.
  GLint last_framebuffer = 0, last_program = 0, last_vao = 0, last_texture = 0, last_viewport[4];
  glGetIntegerv(GL_FRAMEBUFFER_BINDING, &last_framebuffer);
  glGetIntegerv(GL_CURRENT_PROGRAM, &last_program);
  glGetIntegerv(GL_VERTEX_ARRAY_BINDING, &last_vao);
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &last_texture);
  glGetIntegerv(GL_VIEWPORT, last_viewport);
  const GLboolean blend = glIsEnabled(GL_BLEND), scissor = glIsEnabled(GL_SCISSOR_TEST);

  if (!value_texture_) glGenTextures(1, &value_texture_);
  if (values_dirty_) {
    glBindTexture(GL_TEXTURE_2D, value_texture_);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, cols_, rows_, 0, GL_RED, GL_FLOAT, values_.data());
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    values_dirty_ = false;
    ++uploads_;
  }
  if (!colour_texture_) {
    glGenTextures(1, &colour_texture_);
    glGenFramebuffers(1, &framebuffer_);
  }
  if (width_px != rendered_w_ || height_px != rendered_h_) {
    glBindTexture(GL_TEXTURE_2D, colour_texture_);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width_px, height_px, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, colour_texture_, 0);
  }


  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glViewport(0, 0, width_px, height_px);
  glDisable(GL_BLEND);
  glDisable(GL_SCISSOR_TEST);
  glUseProgram(p.program);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, value_texture_);
  glUniform1i(p.u_values, 0);
  glUniform1f(p.u_min, lo_);
  glUniform1f(p.u_max, hi_);
  glUniform1i(p.u_colormap, static_cast<int>(style.colormap));
  glUniform1f(p.u_grid, style.grid ? 1.0f : 0.0f);
  glUniform2f(p.u_target_px, static_cast<float>(width_px), static_cast<float>(height_px));
  glBindVertexArray(p.vao);
  glDrawArrays(GL_TRIANGLES, 0, 3);

  glBindVertexArray(last_vao);
  glUseProgram(last_program);
  glBindTexture(GL_TEXTURE_2D, last_texture);
  glBindFramebuffer(GL_FRAMEBUFFER, last_framebuffer);
  glViewport(last_viewport[0], last_viewport[1], last_viewport[2], last_viewport[3]);
  if (blend) glEnable(GL_BLEND);
  if (scissor) glEnable(GL_SCISSOR_TEST);

  rendered_w_ = width_px;
  rendered_h_ = height_px;
  rendered_style_ = style;
  colour_dirty_ = false;
  ++renders_;
}

bool Heatmap::draw(const char* name, ImVec2 size, const HeatmapStyle& style, int* hovered_row, int* hovered_col) {
  if (rows_ <= 0 || cols_ <= 0 || size.x < 1 || size.y < 1) {
    ImGui::Dummy(size);
    return false;
  }
  const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
  const ImVec2 top_left = ImGui::GetCursorScreenPos();
  if (!glfwGetCurrentContext()) {
    ImGui::Dummy(size);  // headless (panel tests: ImGui without a window or GL): lay out, draw nothing
  } else {
    render_if_needed(size, style);
    // The framebuffer texture has its origin at the bottom: flip v.
    ImGui::Image((ImTextureID)(intptr_t)colour_texture_, size, ImVec2(0, 1), ImVec2(1, 0));
  }
  const ImVec2 bottom_right(top_left.x + size.x, top_left.y + size.y);
  heatmap_placements().push_back({name, ImVec2(top_left.x * scale.x, top_left.y * scale.y),
                                  ImVec2(bottom_right.x * scale.x, bottom_right.y * scale.y), rows_, cols_, lo_,
                                  hi_, this});

  if (!ImGui::IsItemHovered()) return false;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const int col = std::clamp(static_cast<int>((mouse.x - top_left.x) / size.x * cols_), 0, cols_ - 1);
  const int row = std::clamp(static_cast<int>((mouse.y - top_left.y) / size.y * rows_), 0, rows_ - 1);
  if (hovered_row) *hovered_row = row;
  if (hovered_col) *hovered_col = col;
  return true;
}

void Heatmap::render_if_needed(ImVec2 size, const HeatmapStyle& style) {
  const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
  const int width_px = std::max(1, static_cast<int>(std::lround(size.x * scale.x)));
  const int height_px = std::max(1, static_cast<int>(std::lround(size.y * scale.y)));
  const bool style_changed =
      style.colormap != rendered_style_.colormap || style.grid != rendered_style_.grid;
  if (colour_dirty_ || values_dirty_ || style_changed || width_px != rendered_w_ || height_px != rendered_h_)
    render_to_texture(width_px, height_px, style);
}

void colour_bar(const char* label, float lo, float hi, ImVec2 size, Colormap map) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float bar_width = std::min(size.x * 0.35f, ImGui::GetFontSize() * 1.2f);
  const int steps = 64;
  for (int i = 0; i < steps; ++i) {
    // Top of the bar is the high end of the range.
    const Rgb c = colormap_rgb(map, 1.0f - (i + 0.5f) / steps);
    const float y0 = p0.y + size.y * i / steps, y1 = p0.y + size.y * (i + 1) / steps;
    draw->AddRectFilled(ImVec2(p0.x, y0), ImVec2(p0.x + bar_width, y1 + 0.5f), ImColor(c.r, c.g, c.b));
  }
  draw->AddRect(p0, ImVec2(p0.x + bar_width, p0.y + size.y), ImGui::GetColorU32(ImGuiCol_Border));
  char text[32];
  const float text_x = p0.x + bar_width + ImGui::GetStyle().ItemInnerSpacing.x;
  const ImU32 text_colour = ImGui::GetColorU32(ImGuiCol_Text);
  const float line = ImGui::GetFontSize();
  std::snprintf(text, sizeof(text), "%.3g", hi);
  draw->AddText(ImVec2(text_x, p0.y), text_colour, text);
  std::snprintf(text, sizeof(text), "%.3g", 0.5f * (lo + hi));
  draw->AddText(ImVec2(text_x, p0.y + 0.5f * (size.y - line)), text_colour, text);
  std::snprintf(text, sizeof(text), "%.3g", lo);
  draw->AddText(ImVec2(text_x, p0.y + size.y - line), text_colour, text);
  ImGui::Dummy(size);
  if (ImGui::IsItemHovered() && label && *label) ImGui::SetTooltip("%s: colours from %.4g (dark) to %.4g (bright)", label, lo, hi);
}

}  // namespace sf::gui
