// The app's side of the web page it runs in (the web build only: emscripten, app/web/shell.html the page's side).
// A page has no files of its own and no threads; what a desktop program takes from its system comes from the
// browser here, and nothing leaves the user's machine:
//   the shipped models and lessons    preloaded into the page's memory file system at /stepformer/assets
//   a user's model file               the file picker (choose_file) or a drop on the canvas (GLFW's drop), copied
//                                     into the page's memory; read there like any file
//   exports, script screenshots       written to the memory file system as on the desktop, then handed to the
//                                     browser as a download (offer_download)
//   settings                          the settings file, kept in the browser's localStorage after each write
//                                     and put back before the app starts (shell.html)
//   progress for a test or a driver   one console line per change ("stepformer-page: ..."), read by
//                                     tests/web/run_web_app.sh through headless Chromium's log
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace sf::web {

// Before the first frame: the page learns the app is running (its loading note goes away).
void start_page();
// Each frame: the canvas follows the page's size (a resized browser window, a phone turned round).
void fit_canvas_to_page();
// The browser's file picker, for Open model (the page must have seen a click or key in the last few seconds);
// the chosen file arrives later, through take_chosen_files.
void choose_file(const std::string& accept);
std::vector<std::string> take_chosen_files();
// A file the app wrote (an export, a screenshot) handed to the browser as a download of the same name.
void offer_download(const std::string& path);
// The settings file's text, kept in the browser's storage for the next visit (one settings file per page).
void keep_settings(const std::string& text);
// Full screen as the browser allows it: at the next click or key press (a page may not take the screen by itself).
void request_fullscreen(bool on);
// What the page reports on its console each time it changes: a script's or lesson's progress with the translation
// shown ("stepformer-page: lesson pause 3/32; translation: ..."), and the model on show with its translation
// ("stepformer-page: model PATH; translation: ..."). Called every frame; compared with the last frame's fields,
// and only a change is formatted (translation_text is called then only).
struct PageProgress {
  bool script = false;  // a script or lesson runs: the fields below
  bool lesson = false, waiting = false, finished = false;
  int pause = 0, pauses = 0;
  std::string model_path;  // "" while no model is in (loading, a decoding running)
  std::vector<int> translation;  // the ids shown

  bool operator==(const PageProgress&) const = default;
};
void report_progress(const PageProgress& now, const std::function<std::string()>& translation_text);
void report_exit(int code);

}  // namespace sf::web
