// A modal dialog for problems the user must see: a model file that does not open (naming the file, the
// problem, and what stays loaded), a damaged settings file. Messages queue; one shows at a time, until OK
// (or Enter / Escape). The GUI boundary of house-style habit 9: the core's typed errors end up here.
#pragma once
#include <deque>
#include <string>

namespace sf::gui {

struct DialogMessage {
  std::string title;    // the window title: "Cannot open the model"
  std::string file;     // the file concerned ("" for none): shown on its own line, name then folder
  std::string problem;  // what went wrong, as the core said it
  std::string hint;     // plain words: what that means and what happens now
};

class MessageDialog {
 public:
  void show(DialogMessage message);
  // Call once per frame, inside the main window. Returns true while a dialog is open.
  bool draw();
  bool open() const { return !queue_.empty(); }
  const DialogMessage* current() const { return queue_.empty() ? nullptr : &queue_.front(); }
  void close();  // closes the one showing, on the next draw (scripts: `show stage`)

 private:
  std::deque<DialogMessage> queue_;
  bool close_requested_ = false;
};

}  // namespace sf::gui
