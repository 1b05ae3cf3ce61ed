#include "gui/options.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "backend/backend.h"
#include "model/hf_marian.h"
#include "gui/app_state.h"
#include "gui/settings.h"
#include "io/user_files.h"
#include "transformer/interventions.h"
#include "util/printable.h"
#include "gui/script/script.h"
#include "gui/stages.h"

namespace sf::gui {

namespace {

const char* kUsage =
    "usage: stepformer [OPTIONS]\n"
    "\n"
    "Step through the encoder-decoder Transformer of \"Attention Is All You Need\".\n"
    "Needs a display with OpenGL 3.3; headless, run it under: xvfb-run -a stepformer ...\n"
    "\n"
    "Options:\n"
    "  --model PATH        model file, or Hugging Face Marian folder, to open (default:\n"
    "                      assets/models/de-en.safetensors)\n"
    "  --sentence TEXT     the source sentence (default: an example)\n"
    "  --stage NAME        stage to open (default tokens): %STAGES%\n"
    "  --attention K.L.H   the head the attention stage shows: K is enc, dec or cross (default enc.1.1;\n"
    "                      layers and heads are numbered from 1, as in the paper)\n"
    "  --script FILE       run the commands in FILE, one per line (see the README): %COMMANDS%\n"
    "  --script-grammar    print every script command and what its arguments may be, as JSON, and exit\n"
    "                      (for tools that write scripts; no window)\n"
    "  --lesson FILE       run a lesson: a script whose 'pause' lines wait for Space, Right or\n"
    "                      PageDown (Left or PageUp: back to the previous pause)\n"
    "  --data DIR          Multi30k's tokenized files (train.lc.norm.tok.de, .en) for the Training stage\n"
    "                      (default: ../shared/data/multi30k/tok beside the source tree)\n"
    "  --device D          where decoding, the views' traced pass and the Training stage's runs compute:\n"
    "                      auto (the GPU where this build has CUDA, a GPU is usable and the model fits; the\n"
    "                      default), cpu, or cuda (without a usable GPU: an error naming why, exit 1). A GPU\n"
    "                      that cannot take the model, painted masks and the causal mask off: the CPU, said\n"
    "  --allow-write DIR   the folder a script or lesson may write its screenshots and exports under\n"
    "                      (default: the current folder); they never replace a file\n"
    "  --check-lesson FILE replay a lesson without a window (on --model, default the shipped one) and\n"
    "                      print each pause's stage, caption and problems; exit 1 if there are any\n"
    "  --present           start in presentation mode (F5): large type, high contrast, the stage alone\n"
    "  --fullscreen        start full screen (F11)\n"
    "  --size WxH          window size (default 1280x800; 320x240 to 7680x4320)\n"
    "  --ui-scale X        scale fonts and widgets, 0.5 to 4, e.g. 1.5 on a projector (default 1)\n"
    "  --screenshot PATH   render, save a PNG of the window to PATH and exit\n"
    "  --frames N          frames to render before the screenshot (default 3)\n"
    "  --layout-json PATH  with --screenshot: write where each heatmap was drawn, as JSON\n"
    "  --frame-log PATH    write each frame's time (input to finished picture) and what it recomputed\n"
    "                      (these three replace a regular file at PATH, keeping its permissions; never the\n"
    "                      model, script or lesson, a link, a folder or a device)\n"
    "  --no-settings       neither read nor write the settings and last session (also:\n"
    "                      STEPFORMER_NO_SETTINGS=1); they live in $XDG_CONFIG_HOME/stepformer/settings.json\n"
    "                      (default ~/.config/stepformer/settings.json)\n"
    "  --version           print the version and exit\n"
    "  --help              print this help and exit\n";

// A comma-separated list wrapped to the help's second column (22 spaces in, 56 characters wide).
std::string wrap_list(const std::string& list) {
  std::string out, line;
  const std::string names = list + ",";
  for (size_t at = 0; at < names.size();) {
    const size_t comma = names.find(',', at);
    const std::string name = names.substr(at, comma - at);
    at = comma + 2;
    const bool last = at >= names.size();
    const std::string item = name + (last ? "" : ",");
    if (!line.empty() && line.size() + 1 + item.size() > 56) {
      out += line + "\n                      ";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + item;
  }
  return out + line;
}

// The help text, with the stages that --stage takes and the commands a script may use listed from the tables
// their parsers read (stage_names(), script_command_names()), so the help and the parsers never disagree.
std::string usage() {
  std::string text = kUsage;
  text.replace(text.find("%STAGES%"), 8, wrap_list(stage_names()));
  const std::string commands = "\n                      " + wrap_list(script_command_names());
  text.replace(text.find("%COMMANDS%"), 10, commands);
  return text;
}

bool parse_int(const char* s, int lo, int hi, int* out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

ParsedOptions parse_app_options(int argc, char** argv) {
  ParsedOptions r;
  if (const char* v = std::getenv("STEPFORMER_NO_SETTINGS"); v && *v && std::strcmp(v, "0") != 0)
    r.options.no_settings = true;
  auto error = [&](const std::string& message) {
    std::fprintf(stderr, "stepformer: %s\n(see stepformer --help)\n", printable(message).c_str());
    r.exit_now = true;
    r.exit_code = 2;
    return r;
  };
  // An option given twice is refused rather than one of its values silently dropped (two --screenshot paths, two
  // --model files): the value each option had first, to name both.
  std::map<std::string, std::string> given;
  std::string twice;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      const char* v = argv[++i];
      if (const auto [at, fresh] = given.emplace(name, v); !fresh && twice.empty())
        twice = std::string(name) + " is given twice ('" + printable(at->second) + "', then '" + printable(v) +
                "'): give it once";
      return v;
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage().c_str(), stdout);
      r.exit_now = true;
      return r;
    } else if (arg == "--version") {
      std::printf("stepformer %s (%s)\n", STEPFORMER_VERSION, backend_info().description.c_str());
      r.exit_now = true;
      return r;
    } else if (arg == "--size") {
      const char* v = value("--size");
      int w = 0, h = 0;
      const char* x = v ? std::strchr(v, 'x') : nullptr;
      if (!x || !parse_int(std::string(v, x).c_str(), 320, kMaxWindowWidth, &w) ||
          !parse_int(x + 1, 240, kMaxWindowHeight, &h))
        return error("--size needs WIDTHxHEIGHT from 320x240 to " + std::to_string(kMaxWindowWidth) + "x" +
                     std::to_string(kMaxWindowHeight) + " (8K), e.g. 1920x1080, got '" + printable(v ? v : "") + "'");
      r.options.width = w;
      r.options.height = h;
    } else if (arg == "--screenshot") {
      const char* v = value("--screenshot");
      if (!v || !*v) return error("--screenshot needs a PNG path");
      r.options.screenshot_path = v;
    } else if (arg == "--frames") {
      const char* v = value("--frames");
      if (!v || !parse_int(v, 1, 100000, &r.options.frames))
        return error("--frames needs a whole number from 1 to 100000, got '" + std::string(v ? v : "") + "'");
    } else if (arg == "--layout-json") {
      const char* v = value("--layout-json");
      if (!v || !*v) return error("--layout-json needs a path");
      r.options.layout_json_path = v;
    } else if (arg == "--frame-log") {
      const char* v = value("--frame-log");
      if (!v || !*v) return error("--frame-log needs a path");
      r.options.frame_log_path = v;
    } else if (arg == "--script") {
      const char* v = value("--script");
      if (!v || !*v) return error("--script needs a file");
      r.options.script_path = v;
    } else if (arg == "--check-lesson") {
      const char* v = value("--check-lesson");
      if (!v || !*v) return error("--check-lesson needs a lesson file");
      r.options.check_lesson_path = v;
      r.options.no_settings = true;  // a check reads and writes no settings
    } else if (arg == "--data" || arg == "--allow-write") {  // an existing folder
      const char* v = value(arg.c_str());
      if (!v || !*v) return error(arg + " needs a folder");
      std::error_code ec;
      if (!std::filesystem::is_directory(v, ec))
        return error(arg == "--data" ? "--data needs the folder of Multi30k's tokenized files; '" + printable(v) + "' is not a folder"
                                     : "--allow-write needs an existing folder; '" + printable(v) + "' is not one");
      (arg == "--data" ? r.options.data_dir : r.options.allow_write_folder) = v;
    } else if (arg == "--device") {
      const char* v = value("--device");
      const std::string d = v ? v : "";
      if (d != "auto" && d != "cpu" && d != "cuda") return error("--device needs auto, cpu or cuda, not '" + printable(d) + "'");
      r.options.device = d;
    } else if (arg == "--lesson") {
      const char* v = value("--lesson");
      if (!v || !*v) return error("--lesson needs a file");
      r.options.lesson_path = v;
    } else if (arg == "--script-grammar") {  // printed by main(), which has the training recipes' names
      r.options.script_grammar = true;
    } else if (arg == "--present") {
      r.options.present = true;
    } else if (arg == "--fullscreen") {
      r.options.fullscreen = true;
    } else if (arg == "--no-settings") {
      r.options.no_settings = true;
    } else if (arg == "--model" || arg == "--sentence" || arg == "--stage" || arg == "--attention") {
      const char* v = value(arg.c_str());
      if (!v) return error(arg + " needs a value");
      if (arg == "--model") {
        r.options.model_path = v;
        r.options.model_given = true;
      }
      if (arg == "--sentence") {
        r.options.sentence = v;
        r.options.sentence_given = true;
      }
      if (arg == "--stage") {
        r.options.stage = v;
        r.options.stage_given = true;
        Stage stage;
        if (!stage_from_name(r.options.stage, &stage))
          return error("--stage must be one of " + stage_names() + "; got '" + r.options.stage + "'");
      }
      if (arg == "--attention") {
        try {
          parse_head_ref(v);  // its syntax now; whether the model has that layer and head, once it is loaded
        } catch (const Error& e) {
          return error("--attention takes a head as KIND.L.H (KIND enc, dec or cross; layers and heads from 1, "
                       "e.g. enc.1.1): " + std::string(e.what()));
        }
        r.options.attention = v;
      }
    } else if (arg == "--ui-scale") {
      const char* v = value("--ui-scale");
      char* end = nullptr;
      const float s = v ? std::strtof(v, &end) : 0.0f;
      if (!v || end == v || *end != '\0' || !(s >= 0.5f && s <= 4.0f))
        return error("--ui-scale needs a number from 0.5 to 4, got '" + std::string(v ? v : "") + "'");
      r.options.ui_scale = s;
      r.options.ui_scale_given = true;
    } else {
      return error("unknown option '" + printable(arg) + "'");
    }
    if (!twice.empty()) return error(twice);
  }
  if (!r.options.script_path.empty() && !r.options.lesson_path.empty())
    return error("--script and --lesson cannot be combined (a lesson is a script that waits at its pauses)");
  return r;
}

void apply_last_session(const Settings& settings, AppOptions& options) {
  std::error_code ec;
  if (!options.model_given && !settings.last_model.empty()) {
    if (std::filesystem::is_regular_file(settings.last_model, ec) || is_hf_model_folder(settings.last_model)) {
      options.model_path = settings.last_model;
      options.fallback_model_path = default_model_path();
    } else {
      // Gone, or something that is not a model where it was (a FIFO, a device): said as it is.
      const std::string kind = non_regular_file_kind(settings.last_model);
      std::fprintf(stderr, "stepformer: the last model '%s' %s; opening the shipped model\n",
                   printable(settings.last_model).c_str(),
                   kind.empty()         ? "is gone"
                   : kind == "a folder" ? "is a folder with no model in it"
                                        : ("is " + kind + ", not a model file").c_str());
    }
  }
  if (!options.sentence_given && !settings.last_sentence.empty()) options.sentence = settings.last_sentence;
  Stage stage;
  if (!options.stage_given && stage_from_name(settings.last_stage, &stage)) options.stage = settings.last_stage;
  if (!options.ui_scale_given) options.ui_scale = settings.ui_scale;
}

}  // namespace sf::gui
