// Scripts: `stepformer --script FILE` runs commands one per line, for tests and for teachers' prepared
// walkthroughs. Blank lines and lines starting with # are ignored.
//
//   model PATH               open a model file, in the background as the Open dialog does; the script waits
//                            for it (a bad file shows the error dialog, is reported, the current model stays)
//   open PATH                start opening a model file and go on at once (as a click on Open: the next
//                            commands run while it loads; for screenshots of the loading indicator)
//   sentence TEXT...         set the source sentence and translate it
//   stage NAME               go to a stage (the names of --stage)
//   attention KIND.L.H       select an attention head (KIND: enc, dec, cross) and open its stage
//   layer L / head H         select a layer / a head
//   hover ROW COL            put the mouse over a cell of the attention heatmap on screen
//   unhover                  take the mouse off the window (whatever the real pointer does)
//   wait N                   render N frames (a frame is drawn between any two commands anyway)
//   screenshot PATH          save a PNG of the window (after the screen has settled)
//   layout PATH              write where each heatmap was drawn, as JSON (as --layout-json)
//   show VIEW                model-info (the model-info panel), open-model (the Open dialog), stage (back to
//                            the stage; closes dialogs)
//   quit                     exit (exit code 0; a script that ends without quit leaves the app open)
// Interventions (each recomputes the translation and every view):
//   head-off KIND.L.H / head-on KIND.L.H     switch a head off / on
//   causal-mask on|off, padding-mask on|off, positional on|off
//   mask KIND.L.H ROW COL    flip one cell of the head's mask (blocked <-> allowed), as a click in "paint mask"
//   reset                    every intervention back to the model as trained
// Decoding:
//   step [N] / back [N]      N tokens forward / back (default 1); run: to <eos>; restart: back to <bos>
//   decode greedy | decode sample TEMPERATURE [TOP_K [TOP_P [SEED]]] | decode beam WIDTH [ALPHA]
//   reference TEXT           teacher forcing with this reference translation ("reference -": free running)
//   force POS WORD           force WORD at output position POS; the rest of the translation follows
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gui/app.h"

namespace sf::gui {

struct ScriptCommand {
  int line = 0;
  std::string name;
  std::vector<std::string> args;  // the words after the name ("sentence" keeps the rest of the line as one)
};

struct Script {
  std::vector<ScriptCommand> commands;
};

// Parses a script file; on error returns nullopt and writes "FILE:LINE: problem" to `error`.
std::optional<Script> parse_script_file(const std::string& path, std::string& error);
std::optional<Script> parse_script(const std::string& text, const std::string& origin, std::string& error);

// Runs a script one step per frame against the app.
class ScriptRunner {
 public:
  explicit ScriptRunner(Script script) : script_(std::move(script)) {}

  // Before building a frame: runs commands until one needs the frame drawn. Messages (errors of a command,
  // e.g. a model that does not load) go to `log`.
  void before_frame(App& app, std::vector<std::string>& log);
  // The mouse position a `hover` asked for (framebuffer pixels), while it applies.
  std::optional<ImVec2> mouse() const { return mouse_; }
  // After the frame is rendered: a screenshot / layout path to write now, if one is due.
  std::optional<std::string> screenshot_due();
  std::optional<std::string> layout_due();
  bool quit() const { return quit_; }
  bool finished() const { return next_ >= script_.commands.size() && wait_frames_ == 0; }

 private:
  Script script_;
  size_t next_ = 0;
  int wait_frames_ = 0;
  std::optional<ImVec2> mouse_;
  std::optional<std::string> screenshot_, layout_;
  bool quit_ = false;
  bool wait_for_load_ = true;  // at start (the app's first model) and after `model`: commands wait for it
  int loading_line_ = 0;       // the line of a `model` command whose file is loading
};

}  // namespace sf::gui
