#include "gui/export.h"

#include <fcntl.h>
#include <stb/stb_image_write.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "gui/text/text.h"

namespace sf::gui {

namespace fs = std::filesystem;

const char* export_kind_label(ExportKind kind) {
  switch (kind) {
    case ExportKind::WindowPng: return tr(T::export_kind_window_png);
    case ExportKind::PanelPng: return tr(T::export_kind_panel_png);
    case ExportKind::Csv: return tr(T::export_kind_csv);
    case ExportKind::Npy: return tr(T::export_kind_npy);
  }
  return "";
}

const char* export_kind_extension(ExportKind kind) {
  switch (kind) {
    case ExportKind::WindowPng: case ExportKind::PanelPng: return ".png";
    case ExportKind::Csv: return ".csv";
    case ExportKind::Npy: return ".npy";
  }
  return "";
}

const char* export_kind_command(ExportKind kind) {
  switch (kind) {
    case ExportKind::WindowPng: return "export-png";
    case ExportKind::PanelPng: return "export-panel";
    case ExportKind::Csv: return "export-csv";
    case ExportKind::Npy: return "export-npy";
  }
  return "";
}

std::string npy_bytes(const float* values, int rows, int cols) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                     std::to_string(cols) + "), }";
  // magic (6) + version (2) + header length (2) + dict + padding + '\n' = a multiple of 64.
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  out += dict;
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  out.reserve(out.size() + 4 * n);
  for (size_t i = 0; i < n; ++i) {  // little-endian whatever the host's order
    uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((bits >> (8 * b)) & 0xff));
  }
  return out;
}

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace

std::string csv_text(const TensorView& t) {
  bool any_nan = false;
  const size_t n = static_cast<size_t>(t.rows) * static_cast<size_t>(t.cols);
  for (size_t i = 0; i < n && !any_nan; ++i) any_nan = std::isnan(t.values[i]);
  std::string out = "# " + t.name;
  if (!t.description.empty()) out += " (" + t.description + ")";
  out += ", shape (" + std::to_string(t.rows) + ", " + std::to_string(t.cols) + "), float32";
  if (any_nan) out += "; nan = blocked by the mask";
  out += "\nrow";
  for (int c = 0; c < t.cols; ++c) {
    out += ',';
    out += csv_field(static_cast<size_t>(c) < t.col_labels.size() ? t.col_labels[c] : std::to_string(c));
  }
  out += "\n";
  char number[32];
  for (int r = 0; r < t.rows; ++r) {
    out += csv_field(static_cast<size_t>(r) < t.row_labels.size() ? t.row_labels[r] : std::to_string(r));
    for (int c = 0; c < t.cols; ++c) {
      const float v = t.values[static_cast<size_t>(r) * t.cols + c];
      if (std::isnan(v)) std::snprintf(number, sizeof(number), ",nan");
      else std::snprintf(number, sizeof(number), ",%.9g", static_cast<double>(v));  // 9 digits: the exact float32
      out += number;
    }
    out += "\n";
  }
  return out;
}

std::string png_bytes(const std::vector<unsigned char>& rgb, int width, int height) {
  std::string out;
  if (width <= 0 || height <= 0 || rgb.size() != static_cast<size_t>(width) * height * 3) return out;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &out, width, height, 3, rgb.data(), width * 3)) out.clear();
  return out;
}

std::string default_export_path(const std::string& directory, const std::string& stage, ExportKind kind,
                                const std::string& what) {
  std::string suffix;
  for (char c : what) suffix += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  const std::string stem = "stepformer-" + stage + (suffix.empty() ? "" : "-" + suffix) + "-";
  const fs::path dir = directory.empty() ? fs::path(".") : fs::path(directory);
  for (int n = 1;; ++n) {
    const fs::path candidate = dir / (stem + std::to_string(n) + export_kind_extension(kind));
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(candidate, ec)) || n >= 100000)
      return directory.empty() ? candidate.filename().string() : candidate.string();
  }
}

}  // namespace sf::gui
