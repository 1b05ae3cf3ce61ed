// A tensor as every panel shows it: a heatmap with its rows' labels on the left, its columns' labels above
// (read bottom to top), its colour bar on the right, and zoom and pan once the cells are too small to read.
//
//   [row labels | map                         | colour bar ]
//                                              | minimap    ]   (while zoomed: the whole map, the window marked)
//
// - Labels are drawn once a cell can hold them (half the text size, at least 10 px); smaller, only the hovered
//   row's label shows. With `always_label` (presentation mode) the view zooms in until every row it shows has
//   its label, says so in the corner above the row labels ("rows 1-23 of 42"), and the user pans to the rest:
//   labels are never thinned.
// - Zoom: the mouse wheel over the map (about the pointer), or = and - while the pointer is over it; 0 fits the
//   whole map again. A drag pans. A click (without a drag) is reported, for the panels' cell actions.
// - Hovering a cell outlines its row and its column and lights their labels; on a map whose rows and columns are
//   tokens (an attention) the cell is reported as a query and a key, so every other view of the same attention
//   marks the same row (queries) and column (keys): gui/widgets.h TokenHover. A token hovered elsewhere outlines
//   the rows or columns that are that token in the role the axis plays.
// - A marked cell (options.marked: an opened attention cell) is outlined, with its row and column, while it is.
// - Nothing is drawn outside the rectangle the caller gives: the map, its labels and the bar share it.
#pragma once
#include <imgui.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gui/render/heatmap.h"
#include "gui/widgets.h"
#include "util/tensor.h"

namespace sf::gui {

// One axis of a map: its labels and what they are.
struct MapAxis {
  const std::vector<std::string>* labels = nullptr;  // one per row / column; null: no labels
  const std::vector<std::string>* tips = nullptr;    // what hovering a label shows; null: the label itself
  bool tokens = false;                               // the labels are positions of `side`: hovers link views
  TokenSide side = TokenSide::Source;
  TokenRole role = TokenRole::Token;                 // queries (an attention's rows), keys (its columns), or tokens
};

// A cell marked on a map whatever the pointer does (an attention cell whose computation is open).
struct MapCell {
  int row = -1, col = -1;
};

struct MapViewOptions {
  HeatmapStyle style;
  bool colour_bar = true;
  const char* value_name = nullptr;  // the colour bar's and the cell tooltip's name for a value (null: "value")
  bool square_cells = false;         // keep cells square (attention maps); the map may then not fill the width
  bool always_label = false;         // zoom in until each shown row has a readable label (presentation mode),
                                     // and say so in the corner above the row labels
  float top_room = -1;               // the room for the column labels (a caller that fitted the map); < 0: worked
                                     // out here (at most five lines of text)
  float label_size = -1;             // the labels' type size (a caller that fitted the map); < 0: the text's,
                                     // at most a cell high
  bool tooltip = true;               // a tooltip with the hovered cell's labels and value
  float label_width = -1;            // room for the row labels; < 0: the widest label's
  MapCell marked;                    // outlined with its row and column (row < 0: none)
};

struct MapViewHit {
  bool hovered = false;
  int row = -1, col = -1;  // the cell under the pointer while hovered
  bool clicked = false;    // released over (row, col) without dragging
};

// The half-width of a symmetric scale for signed values: max |m|, at least 1e-3 (an all-zero map, a head switched
// off, still has a range: its one colour is the scale's centre).
inline float signed_range(const Mat& m) { return std::max(1e-3f, m.size() ? m.cwiseAbs().maxCoeff() : 0.0f); }

class MapView {
 public:
  Heatmap& heatmap() { return map_; }
  const Heatmap& heatmap() const { return map_; }
  // The values of `m` (rows, cols), coloured from lo to hi.
  void set_values(const Mat& m, float lo, float hi) {
    map_.set_values(m.data(), static_cast<int>(m.rows()), static_cast<int>(m.cols()), lo, hi);
  }
  // Signed values for the diverging scale, centred on 0: [-signed_range(m), signed_range(m)].
  void set_signed(const Mat& m) {
    const float r = signed_range(m);
    set_values(m, -r, r);
  }

  // Lays the map out in `size` (ImGui units) at the cursor and draws it; the cursor then moves past `size`.
  MapViewHit draw(const char* name, ImVec2 size, const MapAxis& rows, const MapAxis& cols,
                     const MapViewOptions& options = {});

  // The zoom (1 = the whole map) and the window's first cell; set_zoom keeps `row`, `col` in view (scripts,
  // tests, lessons).
  float zoom() const { return zoom_; }
  void set_zoom(float zoom, float row = -1, float col = -1);
  // The whole map again (a zoom asked for since the last draw wins: a script's `attention` then `zoom`).
  void fit() {
    if (!zoom_requested_) zoom_ = 1, user_zoomed_ = false, first_col_ = 0, first_row_ = 0;
  }
  HeatmapWindow window() const { return window_; }

  // Presentation mode's fit of a map of square cells, rows x cols, into `room` (ImGui units), with row labels
  // as wide as `row_label_width` and column labels as long as `col_label_width` in the body text: the cells take
  // three quarters of the room's height (at most three lines of type a cell, and what the width leaves beside the
  // labels and the colour bar), the labels (rows and columns in one size: at most the body text and a cell, never
  // below half of the body text) what is left above and beside. `zooms`: the cells are lower than half the body
  // text, so the map (always_label) zooms in and gets the room's whole height.
  struct PresentedFit {
    float cell = 1, label_size = 10, label_width = 0, top_room = 0;
    bool zooms = false;
    ImVec2 size{0, 0};  // what to draw the map in (labels, cells, colour bar)
  };
  static PresentedFit fit_presented(int rows, int cols, float row_label_width, float col_label_width, ImVec2 room,
                                    float bar_width);

  // The room a row label column of `labels` needs, in the current font.
  static float label_width_for(const std::vector<std::string>& labels);
  // The smallest type a label is drawn in: half the text size, never below 10 pixels.
  static float min_label_size();
  // The widest of `labels` in the current font.
  static float widest_label(const std::vector<std::string>& labels);
  // The height column labels take above cells `cell` wide, their longest `longest_label` wide unrotated: a label
  // is drawn rotated, at most a cell wide (its length shrinks with the cell) and five lines long; none below a
  // readable cell (half a pixel of rounding allowed). For a caller that fits a map to its room (attention).
  static float column_label_room(float longest_label, float cell);

 private:
  void clamp_window(int rows, int cols);

  Heatmap map_;
  float zoom_ = 1.0f, min_zoom_ = 1.0f;
  float first_col_ = 0, first_row_ = 0;  // the window's top-left, in cells
  HeatmapWindow window_;
  bool dragging_ = false;
  ImVec2 drag_from_{0, 0};
  float drag_col_ = 0, drag_row_ = 0;
  float pending_row_ = -1, pending_col_ = -1;  // set_zoom's cell to bring into view on the next draw
  int last_rows_ = -1, last_cols_ = -1;         // a map of another shape starts fitted again
  bool zoom_requested_ = false;                 // set_zoom since the last draw
  bool user_zoomed_ = false;                    // zoomed by the wheel, the keys or set_zoom (not the least zoom)
};

}  // namespace sf::gui
