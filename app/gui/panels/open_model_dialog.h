// The "Open model" dialog (top bar button "Open model...", Ctrl+O): a path field with an Open button, the
// recent files (most recent first; files that are gone greyed, each removable) and the models shipped with
// Stepformer. It only picks a path: the app loads it in the background (gui/model_loader.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace sf::gui {

struct OpenModelChoice {
  std::optional<std::string> open;    // a path to load
  std::optional<std::string> remove;  // a recent entry the user removed
};

class OpenModelDialog {
 public:
  // Opens the dialog on the next draw, its path field holding `path`.
  void show(const std::string& path);
  void close() { close_requested_ = true; }
  bool open() const { return open_; }
  // Call once per frame inside the main window. `recent`: most recent first. `shipped_folder`: its
  // .safetensors files are listed (the folder of the shipped model).
  OpenModelChoice draw(const std::vector<std::string>& recent, const std::string& shipped_folder);

 private:
  bool show_requested_ = false, close_requested_ = false, open_ = false;
  std::string path_;
  std::vector<std::string> shipped_;  // listed when the dialog opens, not every frame
};

}  // namespace sf::gui
