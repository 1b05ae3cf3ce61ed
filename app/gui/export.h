// Export: what is on screen as files a student can open elsewhere. The window or the current panel as PNG,
// the tensor a panel shows (its heatmap's values) as CSV or as NumPy's NPY.
//
// Every file is written by write_user_file (io/user_files.h): atomically, never onto a link, a device, a folder
// or the open model, and without `replace` never onto an existing file, even one that appears between the
// user's check and the write (link(2) refuses to overwrite). A script's exports also stay under the folder
// the user allowed (--allow-write, the current folder by default).
// Nothing here needs ImGui or GL: the app hands over pixels and values.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/user_files.h"

namespace sf::gui {

enum class ExportKind { WindowPng, PanelPng, Csv, Npy };

const char* export_kind_label(ExportKind kind);     // "window as PNG", ...
const char* export_kind_extension(ExportKind kind);  // ".png", ".csv", ".npy"
const char* export_kind_command(ExportKind kind);    // the script command: export-png, export-panel, ...

// What the user (the Export popup) or a script asks for. The app runs it on the next frame it draws.
struct ExportRequest {
  ExportKind kind = ExportKind::WindowPng;
  std::string path;
  bool replace = false;  // the user answered "Replace FILE?" with Replace; scripts never set it
  std::string allowed_folder;  // a script's request: only under this folder ("" = the user chose the path)
  std::string tensor;    // CSV/NPY: the heatmap's name; empty: the panel's main heatmap (the first it draws)
};

// A heatmap's values as they are exported: rows x cols float32, row-major, with optional axis labels (one per
// row / column, or empty: then the CSV names rows and columns by index).
struct TensorView {
  std::string name;         // e.g. "attention"
  std::string description;  // e.g. "encoder self-attention, layer 0, head 3"
  int rows = 0, cols = 0;
  const float* values = nullptr;  // (rows, cols)
  std::vector<std::string> row_labels, col_labels;
};

// NPY format version 1.0: magic "\x93NUMPY", version 1.0, a little-endian uint16 header length, a Python dict
// literal {'descr': '<f4', 'fortran_order': False, 'shape': (rows, cols), } padded with spaces and ended by
// '\n' so that the data starts at a multiple of 64 bytes, then the float32 values, little-endian, row-major.
std::string npy_bytes(const float* values, int rows, int cols);

// CSV: a first line "# NAME (DESCRIPTION), shape (ROWS, COLS), float32[; NaN = ...]", then a header row
// (the corner cell "row", then the column labels), then one line per row: its label and the values with 9
// significant digits (exactly the float32). Labels are quoted as RFC 4180 asks when they hold , " or a newline.
// NaN (cells a mask blocked) is written as "nan".
std::string csv_text(const TensorView& tensor);

// RGB pixels (top row first, 3 bytes per pixel) as PNG bytes; empty on failure.
std::string png_bytes(const std::vector<unsigned char>& rgb, int width, int height);

// Files are written by write_user_file (io/user_files.h, see above).

// The first free name "stepformer-STAGE[-WHAT]-N.EXT" (N = 1, 2, ...) in `directory`: a default that
// never names an existing file.
std::string default_export_path(const std::string& directory, const std::string& stage, ExportKind kind,
                                const std::string& what = "");

}  // namespace sf::gui
