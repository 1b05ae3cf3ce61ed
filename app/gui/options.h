// Command-line options of the desktop app (`stepformer --help`).
#pragma once
#include <optional>
#include <string>

namespace sf::gui {

// The UI scale's range (--ui-scale, the A-/A+ buttons, the script's ui-scale, the settings).
inline constexpr float kMinUiScale = 0.5f, kMaxUiScale = 4.0f;

// The largest window --size opens (8K): past this a framebuffer takes gigabytes.
inline constexpr int kMaxWindowWidth = 7680, kMaxWindowHeight = 4320;

struct AppOptions {
  int width = 1280, height = 800;     // --size WxH (window size in screen units)
  std::string screenshot_path;        // --screenshot PATH: render, save a PNG of the window, exit 0
  int frames = 3;                     // --frames N: frames rendered before the screenshot (layout settles)
  std::string layout_json_path;       // --layout-json PATH: where each heatmap was drawn (for tests)
  std::string frame_log_path;         // --frame-log PATH: each frame's milliseconds and what it recomputed
  float ui_scale = 1.0f;              // --ui-scale X: font and widget scale (1.5 for a projector)
  std::string model_path;             // --model PATH (default: the shipped model)
  std::string sentence;               // --sentence TEXT (default: the example sentence)
  std::string stage = "tokens";       // --stage: tokens, embedding, positional, encoder-attention, ... (app.h)
  std::string attention;              // --attention KIND.L.H: the head the attention stages show
  std::string script_path;            // --script FILE: run the commands of gui/script/script.h
  std::string lesson_path;            // --lesson FILE: run a script interactively (pause waits for a key)
  std::string data_dir;               // --data DIR: Multi30k's tokenized files for live training (default:
                                      // ../shared/data/multi30k/tok beside the source tree, util/paths.h)
  std::string device = "auto";       // --device auto|cpu|cuda: where the Training stage's runs compute (backend/device.h)
  std::string allow_write_folder = ".";  // --allow-write DIR: where a script or lesson may write (never replacing)
  std::string check_lesson_path;      // --check-lesson FILE: replay the lesson without a window, report, exit
  std::string language;               // --language en|ko|zh: the app's words ("" = the last session's, else the
                                      // system locale's, else English: gui/text/text.h system_language())
  bool present = false;               // --present: start in presentation mode
  bool fullscreen = false;            // --fullscreen: start full screen on the primary monitor
  bool script_grammar = false;        // --script-grammar: print the script commands' grammar as JSON, exit 0
  bool no_settings = false;           // --no-settings or STEPFORMER_NO_SETTINGS=1: no settings read or written
  // Which options the command line gave: the last session (settings.h) fills in only the others.
  bool model_given = false, sentence_given = false, stage_given = false, ui_scale_given = false,
       language_given = false;
  std::string fallback_model_path;    // opened if model_path, restored from the last session, fails to load
};

struct ParsedOptions {
  AppOptions options;
  bool exit_now = false;  // --help / --version handled, or an error
  int exit_code = 0;
};

// Parses argv; prints help, version or a clear error itself (to stdout / stderr).
ParsedOptions parse_app_options(int argc, char** argv);

struct Settings;
// Fills what the command line left open from the last session: the model (if its file still exists; the
// shipped model becomes the fallback), the sentence, the stage (if it is a known id), the UI scale and the
// language (if it is one the app speaks).
void apply_last_session(const Settings& settings, AppOptions& options);

}  // namespace sf::gui
