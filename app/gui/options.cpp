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
#include "gui/text/glyphs.h"
#include "gui/text/line_breaks.h"
#include "gui/text/text.h"

namespace sf::gui {

namespace {

// How many columns `cp` takes in a terminal: two for Hangul, Han characters, kana and full-width forms.
int columns(char32_t cp) {
  const bool wide = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
                    (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
                    (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0xFFE0 && cp <= 0xFFE6);
  return wide ? 2 : 1;
}

// `text` wrapped to `width` columns (gui/text/line_breaks.h: at spaces, between Chinese characters), each line
// after the first `indent` spaces in.
std::string wrap_text(const std::string& text, int width, int indent) {
  std::string out;
  const auto advance = [](char32_t c) { return static_cast<float>(columns(c)); };
  for (const std::string& line : break_lines(text, static_cast<float>(width), advance)) {
    if (!out.empty()) {
      out += '\n';
      out.append(static_cast<size_t>(indent), ' ');
    }
    out += line;
  }
  return out;
}

// The help text in the current language: each option's description from the string table (gui/text/en.inc,
// "--help"), wrapped to the second column (22 columns in, 78 wide). The stages that --stage takes and the commands
// a script may use are listed from the tables their parsers read (stage_names(), script_command_names()), so the
// help and the parsers never disagree.
std::string usage() {
  struct Line {
    const char* option;
    T description;
  };
  const Line lines[] = {
      {"FILE", T::help_file},                    {"--model PATH", T::help_model},           {"--sentence TEXT", T::help_sentence},
      {"--stage NAME", T::help_stage},           {"--attention K.L.H", T::help_attention},
      {"--script FILE", T::help_script},         {"--script-grammar", T::help_script_grammar},
      {"--lesson FILE", T::help_lesson},         {"--data DIR", T::help_data},
      {"--device D", T::help_device},            {"--allow-write DIR", T::help_allow_write},
      {"--check-lesson FILE", T::help_check_lesson}, {"--language L", T::help_language},
      {"--present", T::help_present},            {"--fullscreen", T::help_fullscreen},
      {"--size WxH", T::help_size},              {"--ui-scale X", T::help_ui_scale},
      {"--screenshot PATH", T::help_screenshot}, {"--frames N", T::help_frames},
      {"--layout-json PATH", T::help_layout_json}, {"--frame-log PATH", T::help_frame_log},
      {"--no-settings", T::help_no_settings},    {"--version", T::help_version},
      {"--help", T::help_help},
  };
  constexpr int kColumn = 22, kWidth = 78;
  std::string text = std::string(tr(T::help_usage)) + "\n\n" + wrap_text(tr(T::help_about), kWidth, 0) + "\n\n" +
                     tr(T::help_options) + "\n";
  for (const Line& l : lines) {
    std::string description;
    if (l.description == T::help_stage) {
      // (and those a decoder-only model lacks: its encoder's and the cross-attention; said once a model opens)
      std::string missing;
      for (int s = 0; s < static_cast<int>(Stage::Count); ++s)
        if (!stage_in_shape(static_cast<Stage>(s), ModelStacks::DecoderOnly))
          missing += (missing.empty() ? "" : ", ") + std::string(stage_name(static_cast<Stage>(s)));
      description = tr(l.description, {{"stages", stage_names()}}) + " " +
                    tr(T::gpt_help_stage_missing, {{"shape", shape_text(ModelStacks::DecoderOnly)}, {"stages", missing}});
    }
    else if (l.description == T::help_script) description = tr(l.description, {{"commands", script_command_names()}});
    else description = tr(l.description);
    std::string head = std::string("  ") + l.option;
    head += head.size() + 1 > kColumn ? std::string(" ") : std::string(kColumn - head.size(), ' ');
    for (size_t at; (at = description.find("\\$")) != std::string::npos;) description.erase(at, 1);  // "\$": a dollar
    text += head + wrap_text(description, kWidth - kColumn, kColumn) + "\n";
  }
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
    auto note_given = [&](const char* name, const char* v) {
      if (const auto [at, fresh] = given.emplace(name, v); !fresh && twice.empty())
        twice = std::string(name) + " is given twice ('" + printable(at->second) + "', then '" + printable(v) +
                "'): give it once";
    };
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      const char* v = argv[++i];
      note_given(name, v);
      return v;
    };
    if (arg == "--help" || arg == "-h") {
      // In the language asked for anywhere on the line, else the system's (the settings are not read for help).
      Language language = system_language();
      for (int k = 1; k + 1 < argc; ++k)
        if (std::string(argv[k]) == "--language") language_from_code(argv[k + 1], &language);
      set_language(language);
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
    } else if (arg == "--language") {
      const char* v = value("--language");
      Language language;
      if (!v || !language_from_code(v, &language))
        return error("--language takes en (English), ko (Korean) or zh (Simplified Chinese), got '" +
                     printable(v ? v : "") + "'");
      r.options.language = v;
      r.options.language_given = true;
    } else if (arg == "--ui-scale") {
      const char* v = value("--ui-scale");
      char* end = nullptr;
      const float s = v ? std::strtof(v, &end) : 0.0f;
      if (!v || end == v || *end != '\0' || !(s >= 0.5f && s <= 4.0f))
        return error("--ui-scale needs a number from 0.5 to 4, got '" + std::string(v ? v : "") + "'");
      r.options.ui_scale = s;
      r.options.ui_scale_given = true;
    } else if (!arg.empty() && arg[0] != '-') {
      // A bare path, as a file manager passes one (the desktop entry's %f): a lesson runs as with --lesson, anything
      // else opens as with --model. Given beside the option it stands for, it counts as that option given twice.
      if (std::filesystem::path(arg).extension() == ".lesson") {
        note_given("--lesson", argv[i]);
        r.options.lesson_path = arg;
      } else {
        note_given("--model", argv[i]);
        r.options.model_path = arg;
        r.options.model_given = true;
      }
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
  Language language;  // a code this version does not speak (a newer version's) is left for the locale's default
  if (!options.language_given && language_from_code(settings.language, &language)) options.language = settings.language;
}

}  // namespace sf::gui
