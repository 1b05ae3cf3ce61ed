#include "gui/script/script_parse.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <sstream>

#include "gui/options.h"
#include "gui/stages.h"
#include "gui/text/text.h"
#include "io/user_files.h"
#include "transformer/interventions.h"
#include "util/error.h"

namespace sf::gui {

namespace {

// Commands and the number of arguments they take (-1: the rest of the line as one argument; -2: the rest of the
// line, which may be empty; -3: none or one word).
struct Spec {
  const char* name;
  int args;
};
constexpr Spec kSpecs[] = {{"model", -1},     {"sentence", -1}, {"stage", 1},     {"attention", 1},
                           {"layer", 1},      {"head", 1},      {"hover", 2},     {"unhover", 0},   {"wait", 1},
                           {"screenshot", -1}, {"layout", -1},  {"quit", 0},
                           {"present", 1},     {"fullscreen", 1}, {"ui-scale", 1}, {"caption", -2},
                           {"pause", 0},       {"export-png", -1}, {"export-panel", -1}, {"export-csv", -1},
                           {"export-npy", -1},
                           // interventions
                           {"head-off", 1},   {"head-on", 1},   {"causal-mask", 1}, {"padding-mask", 1},
                           {"positional", 1}, {"mask", 3},      {"reset", 0},
                           // decoding
                           {"step", -3},      {"back", -3},     {"run", 0},       {"restart", 0},
                           {"decode", -1},    {"reference", -1}, {"force", 2},      {"position", 1},
                           // model files and views (App, app_model.cpp): load and go on; show a view
                           {"open", -1},      {"show", 1},
                           // the attention stages' views: heatmap or lines, a cell opened, the map zoomed
                           {"view", 1},       {"expand", -1},   {"zoom", -1},
                           // presentation mode's explanations: opened or folded behind "Explain"
                           {"explain", 1},
                           // <pad> tokens after the sentence, as a batch would add them
                           {"pad", 1},
                           // training (gui/training.h): a live run, its timeline's snapshots
                           {"train", -1},     {"snapshot", 1},  {"wait-train", 1},
                           // what a lesson is written for: its languages or its model (checked, not loaded)
                           {"written-for", -1}};



}  // namespace

bool parse_ui_scale(const std::string& s, float* out) {
  char* end = nullptr;
  const float v = std::strtof(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !(v >= kMinUiScale && v <= kMaxUiScale)) return false;
  *out = v;
  return true;
}


namespace {

bool is_int(const std::string& s) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return s.size() < 10;
}

// Why `text` is not a head ("" when it is), in parse_head_ref's words without its function prefix.
std::string head_ref_problem(const std::string& text) {
  try {
    parse_head_ref(text);
    return "";
  } catch (const Error& e) {
    const std::string m = e.what();  // "[parse_head_ref] 'x': ..."
    const size_t end = m.rfind("] ", m.find('\'') == std::string::npos ? m.size() : m.find('\''));
    return m.rfind('[', 0) == 0 && end != std::string::npos ? m.substr(end + 2) : m;
  }
}

}  // namespace

std::string script_command_names() {
  std::string out;
  for (const Spec& s : kSpecs) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

namespace {

std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

// Checks one command's arguments against its spec, normalising them (expand, zoom); the problem, or "".
std::string check_command(ScriptCommand& c, const Spec& spec, const std::string& rest) {
  if (spec.args == -2) {
    if (!rest.empty()) c.args = {rest};
  } else if (spec.args == -1) {
    if (rest.empty()) return tr(T::script_needs_argument, {{"command", c.name}});
    c.args = {rest};
  } else {
    c.args = words_of(rest);
    if (spec.args == -3 ? c.args.size() > 1 : static_cast<int>(c.args.size()) != spec.args)
      return tr(T::script_argument_count, {{"command", c.name}, {"count", spec.args}, {"given", c.args.size()}});
  }
  // Layers and heads are numbered from 1, as in the paper (transformer/interventions.h); 0 was version 0.1's
  // first layer, and is named as that.
  if ((c.name == "layer" || c.name == "head") && c.args.size() == 1 && is_int(c.args[0]) && std::stoi(c.args[0]) == 0)
    return tr(T::script_counts_from_one, {{"command", c.name}});
  if (c.name == "layer" || c.name == "head" || c.name == "wait" || c.name == "hover" || c.name == "step" ||
      c.name == "back" || c.name == "pad" || c.name == "position") {
    const int most = c.name == "wait" ? kMaxWaitFrames : c.name == "step" || c.name == "back" ? kMaxSteps : kMaxScriptCount;
    const int least = c.name == "layer" || c.name == "head" ? 1 : 0;
    for (const auto& a : c.args)
      if (!is_int(a) || std::stoi(a) < least || std::stoi(a) > most)
        return tr(T::script_whole_numbers, {{"command", c.name}, {"least", least}, {"most", most}, {"given", a}});
  }
  if (c.name == "mask")
    for (size_t i = 1; i < 3; ++i)
      if (!is_int(c.args[i]) || std::stoi(c.args[i]) < 0 || std::stoi(c.args[i]) > kMaxScriptCount)
        return tr(T::script_mask_arguments, {{"most", kMaxScriptCount}, {"given", c.args[i]}});
  if (c.name == "train") {
    const std::vector<std::string> words = words_of(c.args[0]);
    const bool start = (words.size() == 2 || words.size() == 3) && words[0] == "start";
    const bool control = words.size() == 1 && (words[0] == "pause" || words[0] == "resume" || words[0] == "stop");
    if (!start && !control) return tr(T::script_train_arguments, {{"given", c.args[0]}});
    c.args = words;
  }
  if (c.name == "snapshot" && c.args[0] != "latest" && c.args[0] != "file" &&
      (!is_int(c.args[0]) || std::stoi(c.args[0]) < 0 || std::stoi(c.args[0]) > kMaxScriptCount))
    return tr(T::script_snapshot_arguments, {{"given", c.args[0]}});
  if (c.name == "wait-train" && (!is_int(c.args[0]) || std::stoi(c.args[0]) < 0 || std::stoi(c.args[0]) > kMaxScriptCount))
    return tr(T::script_wait_train_arguments, {{"most", kMaxScriptCount}, {"given", c.args[0]}});
  if (c.name == "written-for") {
    const std::vector<std::string> words = words_of(c.args[0]);
    const auto code = [](const std::string& w) {
      return w.size() >= 2 && w.size() <= 3 && std::all_of(w.begin(), w.end(), [](char ch) { return std::isalpha(static_cast<unsigned char>(ch)); });
    };
    const size_t dash = words.size() == 1 ? words[0].find('-') : std::string::npos;
    const bool languages = dash != std::string::npos && code(words[0].substr(0, dash)) && code(words[0].substr(dash + 1));
    const bool model = words.size() == 2 && words[0] == "model";
    if (!languages && !model) return tr(T::script_written_for_arguments, {{"given", c.args[0]}});
    c.args = words;
  }
  // Names of stages and views: a mistake is found when the script is read, not when it is reached.
  Stage stage{};
  if (c.name == "stage" && !stage_from_name(c.args[0], &stage))
    return tr(T::script_stage_arguments, {{"stages", stage_names()}, {"given", c.args[0]}});
  if (c.name == "show" && c.args[0] != "model-info" && c.args[0] != "open-model" && c.args[0] != "stage")
    return tr(T::script_show_arguments, {{"given", c.args[0]}});
  if (c.name == "view" && c.args[0] != "lines" && c.args[0] != "heatmap")
    return tr(T::script_view_arguments, {{"given", c.args[0]}});
  if (c.name == "expand") {
    const std::vector<std::string> words = words_of(c.args[0]);
    const bool cell = words.size() == 2 && is_int(words[0]) && is_int(words[1]) && std::stoi(words[0]) >= 0 &&
                      std::stoi(words[1]) >= 0;
    if (!cell && !(words.size() == 1 && words[0] == "off"))
      return tr(T::script_expand_arguments, {{"given", c.args[0]}});
    c.args = words;
  }
  if (c.name == "zoom") {
    const std::vector<std::string> words = words_of(c.args[0]);
    char* end = nullptr;
    const float z = words.empty() ? 0.0f : std::strtof(words[0].c_str(), &end);
    const bool ok = !words.empty() && end && *end == '\0' && z >= 1.0f && z <= 64.0f &&
                    (words.size() == 1 || (words.size() == 3 && is_int(words[1]) && is_int(words[2]) &&
                                           std::stoi(words[1]) >= 0 && std::stoi(words[2]) >= 0));
    if (!ok) return tr(T::script_zoom_arguments, {{"given", c.args[0]}});
    c.args = words;
  }
  if (c.name == "force" && (!is_int(c.args[0]) || std::stoi(c.args[0]) < 0 || std::stoi(c.args[0]) > kMaxScriptCount))
    return tr(T::script_force_arguments, {{"most", kMaxScriptCount}, {"given", c.args[0]}});
  const bool switch_command = c.name == "causal-mask" || c.name == "padding-mask" || c.name == "positional" ||
                              c.name == "present" || c.name == "fullscreen" || c.name == "explain";
  if (switch_command && c.args[0] != "on" && c.args[0] != "off")
    return tr(T::script_switch_arguments, {{"command", c.name}, {"given", c.args[0]}});
  float scale = 0;
  if (c.name == "ui-scale" && !parse_ui_scale(c.args[0], &scale))
    return tr(T::script_ui_scale_arguments, {{"given", c.args[0]}});
  if (c.name == "attention" || c.name == "head-off" || c.name == "head-on" || c.name == "mask")
    if (std::string why = head_ref_problem(c.args[0]); !why.empty())
      return tr(T::script_head_arguments, {{"command", c.name}, {"why", why}});
  return "";
}

}  // namespace

std::optional<Script> parse_script(const std::string& text, const std::string& origin, std::string& error,
                                   ScriptParse mode) {
  // Every line is checked, and every problem listed with its line: a teacher sees them all at once, before
  // the class does. A script with a problem does not run; a lesson runs without the lines at fault (each is
  // reported again, in the caption box, when the lesson reaches it).
  Script script;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#') continue;
    line = line.substr(start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    const size_t space = line.find_first_of(" \t");
    ScriptCommand c;
    c.line = number;
    c.name = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", space));
    const Spec* spec = nullptr;
    for (const Spec& s : kSpecs)
      if (c.name == s.name) spec = &s;
    std::string problem;
    if (!spec) {
      problem = mode == ScriptParse::Lesson
                    ? tr(T::script_unknown_command_lesson, {{"command", c.name}})
                    : tr(T::script_unknown_command_listed, {{"command", c.name}, {"commands", script_command_names()}});
    } else {
      problem = check_command(c, *spec, rest);
    }
    if (!problem.empty()) {
      script.problems.push_back(origin + ":" + std::to_string(number) + ": " + problem);
      if (mode == ScriptParse::Strict) continue;
      c.known = false;  // a lesson keeps the line, reported and skipped when reached
      c.problem = problem;
      c.args = rest.empty() ? std::vector<std::string>{} : std::vector<std::string>{rest};
    }
    script.commands.push_back(std::move(c));
  }
  error.clear();
  for (const std::string& p : script.problems) error += (error.empty() ? "" : "\n") + p;
  if (mode == ScriptParse::Strict && !script.problems.empty()) return std::nullopt;
  return script;
}

std::optional<Script> parse_script_file(const std::string& path, std::string& error, ScriptParse mode) {
  std::string text;
  try {  // a regular file of at most kMaxScriptBytes, opened without blocking (io/user_files.h)
    text = read_user_file(path, kMaxScriptBytes,
                          tr(mode == ScriptParse::Lesson ? T::script_a_lesson : T::script_a_script), "script");
  } catch (const Error& e) {
    error = e.what();
    if (error.rfind("[script] ", 0) == 0) error = error.substr(9);
    return std::nullopt;
  }
  return parse_script(text, path, error, mode);
}

}  // namespace sf::gui
