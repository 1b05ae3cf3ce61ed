// The top bar's "Export" button: a popup to choose what to export (the window or the panel as PNG, the
// panel's tensor as CSV or NPY) and the file name, and a modal that asks "Replace FILE?" before an existing
// file is replaced.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gui/export.h"

namespace sf::gui {

class ExportPopup {
 public:
  struct Context {
    std::string stage;                 // the stage's id, for default file names
    std::vector<std::string> tensors;  // the heatmaps the panel drew, main one first (empty: no tensor)
  };
  // Draws the button and its popups. Returns what to export once the user confirmed it.
  std::optional<ExportRequest> draw(const Context& context);

 private:
  void suggest_path(const Context& context);
  ExportKind kind_ = ExportKind::WindowPng;
  int tensor_ = 0;
  std::string path_;
  bool path_edited_ = false;     // the user typed a name: keep it when the kind changes
  bool ask_replace_ = false;     // open the modal on this frame
  ExportRequest replace_request_;  // what Replace does
};

}  // namespace sf::gui
