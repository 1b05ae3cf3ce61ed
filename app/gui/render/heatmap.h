// Heatmaps: a (rows x cols) float matrix drawn through the GLSL colormap shader (shaders/heatmap.*.glsl).
//
// The values live in an R32F texture that is uploaded only when they change; the shader renders them into an
// RGBA texture of the on-screen size (again only when the values, the range or the size change), which ImGui
// then draws as an image. So a frame with nothing new costs no uploads and no shader passes.
// NaN values mark blocked cells (masked attention) and are drawn hatched.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

#include "gui/render/colormap.h"

namespace sf::gui {

struct HeatmapStyle {
  Colormap colormap = Colormap::Viridis;
  bool grid = true;  // thin lines between cells when cells are large enough
};

class Heatmap;

// Where a heatmap was drawn in the last frame, in framebuffer pixels from the top-left (for tests, hover
// lookups and the layout dump).
struct HeatmapPlacement {
  std::string name;
  ImVec2 min{0, 0}, max{0, 0};
  int rows = 0, cols = 0;
  float lo = 0, hi = 0;
  const Heatmap* heatmap = nullptr;  // what was drawn (its values and labels, for export): valid this frame
};

class Heatmap {
 public:
  Heatmap() = default;
  Heatmap(const Heatmap&) = delete;
  Heatmap& operator=(const Heatmap&) = delete;
  ~Heatmap();

  // Sets the data (row-major, rows * cols values) and the colour range [lo, hi]. Cheap when unchanged.
  void set_values(const float* values, int rows, int cols, float lo, float hi);
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  float lo() const { return lo_; }
  float hi() const { return hi_; }
  float value(int row, int col) const { return values_[static_cast<size_t>(row) * cols_ + col]; }
  const std::vector<float>& values() const { return values_; }  // (rows, cols), row-major
  // Names of the rows and columns (tokens, positions) for export; empty: numbered.
  void set_axis_labels(const std::vector<std::string>& row_labels, const std::vector<std::string>& col_labels = {});
  const std::vector<std::string>& row_labels() const { return row_labels_; }
  const std::vector<std::string>& col_labels() const { return col_labels_; }

  // Draws at the cursor with the given size in ImGui units (as ImGui::Image). Returns true while hovered and
  // writes the hovered cell. Records its placement under `name` for this frame. Without a GL context (the
  // headless panel tests) it only lays out and records the placement.
  bool draw(const char* name, ImVec2 size, const HeatmapStyle& style = {}, int* hovered_row = nullptr,
            int* hovered_col = nullptr);

  // Texture uploads and shader passes done so far (tests check that an unchanged frame does none).
  int upload_count() const { return uploads_; }
  int render_count() const { return renders_; }

 private:
  void render_if_needed(ImVec2 size, const HeatmapStyle& style);  // shader pass when data, range, size changed
  void render_to_texture(int width_px, int height_px, const HeatmapStyle& style);

  std::vector<float> values_;
  std::vector<std::string> row_labels_, col_labels_;
  int rows_ = 0, cols_ = 0;
  float lo_ = 0, hi_ = 1;
  bool values_dirty_ = true;
  unsigned int value_texture_ = 0;  // R32F (cols x rows)
  unsigned int colour_texture_ = 0; // RGBA8, the rendered heatmap
  unsigned int framebuffer_ = 0;
  int rendered_w_ = 0, rendered_h_ = 0;
  HeatmapStyle rendered_style_{};
  bool colour_dirty_ = true;
  int uploads_ = 0, renders_ = 0;
};

// A vertical colour bar with the range printed beside it: what the colours of a heatmap mean.
void colour_bar(const char* label, float lo, float hi, ImVec2 size, Colormap map = Colormap::Viridis);

// Placements of every heatmap drawn since the last reset (the app resets at the start of each frame).
std::vector<HeatmapPlacement>& heatmap_placements();

}  // namespace sf::gui
