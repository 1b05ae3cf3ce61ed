// Heatmaps: a (rows x cols) float matrix drawn through the GLSL colormap shader (shaders/heatmap.*.glsl).
//
// The values live in an R32F texture (cols x rows) that is uploaded only when they change. The shader colours
// the heatmap's pixels straight into the frame, in the place ImGui laid out for it: draw() leaves a callback in
// the window's draw list, and ImGui's renderer calls it in order with the other widgets (so clipping, scrolling
// and overlapping windows behave as for an image). Drawing into the frame rather than into a cached texture of
// its own costs a shader pass per frame, but no framebuffer switch when the values change: with Mesa's software
// renderer each switch flushed the frame so far (~150 us), 2-5 ms after an intervention in the all-heads stage.
// NaN values mark blocked cells (masked attention) and are drawn hatched. The map is opaque (style.Alpha and
// disabled widgets do not fade it), and is not to be the last item of a modal's root window (ImGui would
// then draw the modal's dimming after a callback, which it asserts against): panels draw it in child windows.
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

// The part of a map drawn across its rectangle, in cells: a zoomed view shows a window of the map. cols or rows
// <= 0 mean the whole map.
struct HeatmapWindow {
  float col0 = 0, row0 = 0, cols = 0, rows = 0;
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
  HeatmapWindow window;              // the cells shown across [min, max] (the whole map unless zoomed)
  Colormap colormap = Colormap::Viridis;
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
  // `window`: the cells to show (the whole map by default).
  bool draw(const char* name, ImVec2 size, const HeatmapStyle& style = {}, int* hovered_row = nullptr,
            int* hovered_col = nullptr, HeatmapWindow window = {});

  // Value-texture uploads done so far (an unchanged frame does none).
  int upload_count() const { return uploads_; }

 private:
  void upload_if_needed();

  std::vector<float> values_;
  std::vector<std::string> row_labels_, col_labels_;
  int rows_ = 0, cols_ = 0;
  float lo_ = 0, hi_ = 1;
  bool values_dirty_ = true;
  unsigned int value_texture_ = 0;  // R32F (cols x rows)
  int uploads_ = 0;
};

// A vertical colour bar with the range printed beside it: what the colours of a heatmap mean.
void colour_bar(const char* label, float lo, float hi, ImVec2 size, Colormap map = Colormap::Viridis);
// The width colour_bar needs for the range [lo, hi]: the bar and its widest number, in the current font.
float colour_bar_width(float lo, float hi);

// Placements of every heatmap drawn since the frame began.
std::vector<HeatmapPlacement>& heatmap_placements();
// Starts a frame: forgets the last frame's placements and draw calls (App::frame calls it first).
void begin_heatmap_frame();

}  // namespace sf::gui
