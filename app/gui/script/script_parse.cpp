#include "gui/script/script_parse.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gui/options.h"
#include "gui/stages.h"
#include "gui/text/text.h"
#include "io/user_files.h"
#include "transformer/interventions.h"
#include "util/error.h"

namespace sf::gui {

namespace {

// The largest number a Count reads: nine digits (is_int), so that std::stoi never overflows. `expand` and
// `zoom` take cells up to it; the model's size decides, when the line runs.
constexpr int kMaxWholeNumber = 999999999;

ScriptArg count(const char* name, int least, int most, std::optional<T> problem = T::script_whole_numbers) {
  return {.name = name, .kind = ScriptArgKind::Count, .least = least, .most = most, .problem = problem};
}
ScriptArg number(const char* name, float least, float most, std::optional<T> problem = std::nullopt) {
  return {.name = name, .kind = ScriptArgKind::Number, .number_least = least, .number_most = most,
          .problem = problem};
}
ScriptArg on_off() {
  return {.name = "on|off", .kind = ScriptArgKind::Switch, .words = {"on", "off"},
          .problem = T::script_switch_arguments};
}
ScriptArg keyword(std::vector<std::string> words, std::optional<T> problem = std::nullopt) {
  std::string name;
  for (const std::string& w : words) name += (name.empty() ? "" : "|") + w;
  return {.name = name, .kind = ScriptArgKind::Keyword, .words = std::move(words), .problem = problem};
}
ScriptArg head() { return {.name = "KIND.L.H", .kind = ScriptArgKind::Head, .problem = T::script_head_arguments}; }
ScriptArg of(const char* name, ScriptArgKind kind, const char* language = "") {
  return {.name = name, .kind = kind, .language = language};
}
ScriptArg text(const char* name, const char* language, std::vector<std::string> words = {}) {
  return {.name = name, .kind = ScriptArgKind::Text, .words = std::move(words), .language = language};
}
ScriptArg output(const char* name, const char* extension) {
  return {.name = name, .kind = ScriptArgKind::OutputPath, .extension = extension};
}

// The commands (the user guide's table, docs/user-guide.md "Scripts", says what each does). Layers and heads are
// numbered from 1, as in the paper (transformer/interventions.h).
std::vector<ScriptCommandSpec> make_grammar() {
  using A = ScriptArity;
  using K = ScriptArgKind;
  const ScriptArg model_path = of("PATH", K::ModelPath);
  const ScriptArg checkpoint{.name = "MODEL", .kind = K::Checkpoint, .extension = ".safetensors"};
  const ScriptArg zoom = number("FACTOR", 1.0f, 64.0f);
  // A cell of an attention map, to open or keep in view: its size is the model's, checked when the line runs.
  const auto cell = [](const char* name) { return count(name, 0, kMaxWholeNumber, std::nullopt); };
  return {
      {"model", A::Line, {{model_path}}},
      {"sentence", A::Line, {{text("TEXT", "source")}}},
      {"stage", A::Words, {{{.name = "NAME", .kind = K::Stage, .problem = T::script_stage_arguments}}}},
      {"attention", A::Words, {{head()}}},
      {"layer", A::Words, {{count("L", 1, kMaxScriptCount)}}},
      {"head", A::Words, {{count("H", 1, kMaxScriptCount)}}},
      {"hover", A::Words, {{count("ROW", 0, kMaxScriptCount), count("COL", 0, kMaxScriptCount)}}},
      {"unhover", A::Words, {{}}},
      {"wait", A::Words, {{count("N", 0, kMaxWaitFrames)}}},
      {"screenshot", A::Line, {{output("PATH", ".png")}}},
      {"layout", A::Line, {{output("PATH", ".json")}}},
      {"quit", A::Words, {{}}},
      {"present", A::Words, {{on_off()}}},
      {"fullscreen", A::Words, {{on_off()}}},
      {"ui-scale", A::Words, {{number("X", kMinUiScale, kMaxUiScale, T::script_ui_scale_arguments)}}},
      {"caption", A::LineOrNone, {{text("TEXT", "any")}}},
      // the lesson's name in the lessons popup (gui/panels/lessons_popup.h); nothing happens when it plays
      {"title", A::Line, {{text("TEXT", "any")}}},
      // the language of the app's words (gui/text/text.h): en, ko or zh
      {"language", A::Words, {{keyword({"en", "ko", "zh"}, T::script_language_arguments)}}},
      {"pause", A::Words, {{}}},
      {"export-png", A::Line, {{output("PATH", ".png")}}},
      {"export-panel", A::Line, {{output("PATH", ".png")}}},
      {"export-csv", A::Line, {{output("PATH", ".csv")}}},
      {"export-npy", A::Line, {{output("PATH", ".npy")}}},
      // interventions
      {"head-off", A::Words, {{head()}}},
      {"head-on", A::Words, {{head()}}},
      {"causal-mask", A::Words, {{on_off()}}},
      {"padding-mask", A::Words, {{on_off()}}},
      {"positional", A::Words, {{on_off()}}},
      {"mask", A::Words, {{head(), count("ROW", 0, kMaxScriptCount, T::script_mask_arguments),
                            count("COL", 0, kMaxScriptCount, T::script_mask_arguments)}}},
      {"reset", A::Words, {{}}},
      // decoding
      {"step", A::WordOrNone, {{count("N", 0, kMaxSteps)}}},
      {"back", A::WordOrNone, {{count("N", 0, kMaxSteps)}}},
      {"run", A::Words, {{}}},
      {"restart", A::Words, {{}}},
      {"decode", A::Line, {{of("STRATEGY", K::Strategy)}}},
      {"reference", A::Line, {{text("TEXT", "target", {"-"})}}},  // "-": free running again
      {"force", A::Words,
       {{count("POS", 0, kMaxScriptCount, T::script_force_arguments), of("WORD", K::Word, "target")}}},
      {"position", A::Words, {{count("N", 0, kMaxScriptCount)}}},
      // fill in the blank (an encoder-only model): token N of the sentence as read behind [MASK], or back
      {"mask-token", A::Words, {{count("N", 0, kMaxScriptCount)}}},
      {"unmask-token", A::Words, {{count("N", 0, kMaxScriptCount)}}},
      // model files and views (App, app_model.cpp): load and go on; show a view
      {"open", A::Line, {{model_path}}},
      {"show", A::Words, {{keyword({"model-info", "open-model", "stage"}, T::script_show_arguments)}}},
      // the attention stages' views: heatmap or lines, a cell opened, the map zoomed
      {"view", A::Words, {{keyword({"lines", "heatmap"}, T::script_view_arguments)}}},
      // the output stage's views: the probabilities, every layer's guess (the logit lens), why this word
      {"output-view", A::Words, {{keyword({"probabilities", "lens", "why"}, T::script_output_view_arguments)}}},
      // the "Why this word?" view's method: gradient x input, integrated gradients, attention rollout
      {"why-method", A::Words, {{keyword({"gxi", "ig", "rollout"}, T::script_why_method_arguments)}}},
      // and what it shows: the word on show, or the whole sentence's maps
      {"why-part", A::Words, {{keyword({"word", "sentence"}, T::script_why_part_arguments)}}},
      {"expand", A::LineOfWords, {{cell("ROW"), cell("COL")}, {keyword({"off"})}}, T::script_expand_arguments},
      {"zoom", A::LineOfWords, {{zoom}, {zoom, cell("ROW"), cell("COL")}}, T::script_zoom_arguments},
      // presentation mode's explanations: opened or folded behind "Explain"
      {"explain", A::Words, {{on_off()}}},
      // <pad> tokens after the sentence, as a batch would add them
      {"pad", A::Words, {{count("N", 0, kMaxScriptCount)}}},
      // training (gui/training.h): a live run (with MODEL it saves there and resumes from it), its timeline's snapshots
      {"train", A::LineOfWords, {{keyword({"start"}), of("RECIPE", K::Recipe)},
                                 {keyword({"start"}), of("RECIPE", K::Recipe), checkpoint},
                                 {keyword({"pause", "resume", "stop"})}}, T::script_train_arguments},
      {"snapshot", A::Words, {{count("N", 0, kMaxScriptCount, std::nullopt)}, {keyword({"latest", "file"})}},
       T::script_snapshot_arguments},
      {"wait-train", A::Words, {{count("STEPS", 0, kMaxScriptCount, T::script_wait_train_arguments)}}},
      // what a lesson is written for: its languages or its model (checked, not loaded)
      {"written-for", A::LineOfWords, {{of("SRC-TGT", K::LanguagePair)}, {keyword({"model"}), of("NAME", K::Word)}},
       T::script_written_for_arguments},
  };
}

const std::vector<ScriptCommandSpec>& grammar() {
  static const std::vector<ScriptCommandSpec> table = make_grammar();
  return table;
}

const ScriptCommandSpec* find_command(const std::string& name) {
  for (const ScriptCommandSpec& s : grammar())
    if (name == s.name) return &s;
  return nullptr;
}

// A number, all of `s` as strtof reads it (up to a NUL: what c_str() shows), from least to most.
bool parse_number(const std::string& s, float least, float most, float* out) {
  char* end = nullptr;
  const float v = std::strtof(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !(v >= least && v <= most)) return false;
  *out = v;
  return true;
}

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

// SRC-TGT: two codes of 2 or 3 letters (the C locale's), split at the first dash.
bool is_language_pair(const std::string& word) {
  const auto code = [](const std::string& w) {
    return w.size() >= 2 && w.size() <= 3 &&
           std::all_of(w.begin(), w.end(), [](char ch) { return std::isalpha(static_cast<unsigned char>(ch)); });
  };
  const size_t dash = word.find('-');
  return dash != std::string::npos && code(word.substr(0, dash)) && code(word.substr(dash + 1));
}

// Whether one word fits its argument; `why` gets a head's problem.
bool fits(const ScriptArg& arg, const std::string& word, std::string* why) {
  float value = 0;
  switch (arg.kind) {
    case ScriptArgKind::Count:
      return is_int(word) && std::stoi(word) >= arg.least && std::stoi(word) <= arg.most;
    case ScriptArgKind::Number:
      return parse_number(word, arg.number_least, arg.number_most, &value);
    case ScriptArgKind::Switch:
    case ScriptArgKind::Keyword:
      return std::find(arg.words.begin(), arg.words.end(), word) != arg.words.end();
    case ScriptArgKind::Stage: {
      Stage stage{};
      return stage_from_name(word, &stage);
    }
    case ScriptArgKind::Head:
      *why = head_ref_problem(word);
      return why->empty();
    case ScriptArgKind::LanguagePair:
      return is_language_pair(word);
    case ScriptArgKind::Word:
    case ScriptArgKind::Recipe:  // checked when the line runs, against the recipes the app has
    case ScriptArgKind::Text:
    case ScriptArgKind::ModelPath:
    case ScriptArgKind::OutputPath:
    case ScriptArgKind::Checkpoint:
    case ScriptArgKind::Strategy:
      return true;
  }
  return false;
}

// The message `id` with the values its placeholders name, from those a problem has: the command, the argument's
// range (least, most), what was given, the stages, why a head is not one.
std::string problem_text(T id, const std::string& command, const ScriptArg* arg, const std::string& given,
                         const std::string& why) {
  std::vector<TextArg> values;
  for (const std::string_view name : placeholders(id)) {
    if (name == "command") values.emplace_back(name, command);
    else if (name == "given") values.emplace_back(name, given);
    else if (name == "why") values.emplace_back(name, why);
    else if (name == "stages") values.emplace_back(name, stage_names());
    else if (name == "least" && arg) values.emplace_back(name, arg->least);
    else if (name == "most" && arg) values.emplace_back(name, arg->most);
  }
  return tr(id, values);
}

std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

// Checks one command's arguments against its row of the grammar, setting c.args (a LineOfWords command's words);
// the problem, or "".
std::string check_command(ScriptCommand& c, const ScriptCommandSpec& spec, const std::string& rest) {
  switch (spec.arity) {
    case ScriptArity::LineOrNone:
      if (!rest.empty()) c.args = {rest};
      return "";
    case ScriptArity::Line:
      if (rest.empty()) return tr(T::script_needs_argument, {{"command", c.name}});
      c.args = {rest};
      return "";
    case ScriptArity::LineOfWords:
      if (rest.empty()) return tr(T::script_needs_argument, {{"command", c.name}});
      c.args = words_of(rest);
      break;
    case ScriptArity::Words:
    case ScriptArity::WordOrNone: {
      c.args = words_of(rest);
      const size_t wanted = spec.forms.front().size();
      if (spec.arity == ScriptArity::WordOrNone && c.args.size() > wanted)
        return tr(T::script_argument_count_at_most, {{"command", c.name}, {"count", wanted}, {"given", c.args.size()}});
      if (spec.arity == ScriptArity::Words && c.args.size() != wanted)
        return tr(T::script_argument_count, {{"command", c.name}, {"count", wanted}, {"given", c.args.size()}});
      break;
    }
  }
  std::string why;
  if (spec.forms.size() > 1 || spec.arity == ScriptArity::LineOfWords) {  // one form must fit, word for word
    for (const std::vector<ScriptArg>& form : spec.forms) {
      bool all = form.size() == c.args.size();
      for (size_t i = 0; all && i < form.size(); ++i) all = fits(form[i], c.args[i], &why);
      if (all) return "";
    }
    return problem_text(spec.problem.value(), c.name, nullptr, rest, "");
  }
  // One form: the first argument that does not fit names its problem. Heads are checked last, so that a line
  // with a wrong count and a wrong head (`mask`) names the count.
  const std::vector<ScriptArg>& form = spec.forms.front();
  for (const bool heads : {false, true})
    for (size_t i = 0; i < c.args.size(); ++i) {
      const ScriptArg& arg = form[i];
      if ((arg.kind == ScriptArgKind::Head) != heads || fits(arg, c.args[i], &why)) continue;
      // Layers and heads are numbered from 1, as in the paper; 0 was version 0.1's first, and is named as that.
      if (arg.kind == ScriptArgKind::Count && arg.least == 1 && is_int(c.args[i]) && std::stoi(c.args[i]) == 0)
        return tr(T::script_counts_from_one, {{"command", c.name}});
      return problem_text(arg.problem.value(), c.name, &arg, c.args[i], why);
    }
  return "";
}

}  // namespace

bool parse_ui_scale(const std::string& s, float* out) { return parse_number(s, kMinUiScale, kMaxUiScale, out); }

const std::vector<ScriptCommandSpec>& script_grammar() { return grammar(); }

std::string script_command_names() {
  std::string out;
  for (const ScriptCommandSpec& s : grammar()) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

namespace {

const char* arity_name(ScriptArity arity) {
  switch (arity) {
    case ScriptArity::Words: return "words";
    case ScriptArity::WordOrNone: return "word-or-none";
    case ScriptArity::Line: return "line";
    case ScriptArity::LineOrNone: return "line-or-none";
    case ScriptArity::LineOfWords: return "line-of-words";
  }
  return "";
}

const char* kind_name(ScriptArgKind kind) {
  switch (kind) {
    case ScriptArgKind::Count: return "count";
    case ScriptArgKind::Number: return "number";
    case ScriptArgKind::Switch: return "switch";
    case ScriptArgKind::Keyword: return "keyword";
    case ScriptArgKind::Stage: return "stage";
    case ScriptArgKind::Head: return "head";
    case ScriptArgKind::Word: return "word";
    case ScriptArgKind::Recipe: return "recipe";
    case ScriptArgKind::LanguagePair: return "language-pair";
    case ScriptArgKind::Text: return "text";
    case ScriptArgKind::ModelPath: return "model-path";
    case ScriptArgKind::OutputPath: return "output-path";
    case ScriptArgKind::Checkpoint: return "checkpoint";
    case ScriptArgKind::Strategy: return "strategy";
  }
  return "";
}

std::vector<std::string> split_list(const std::string& list) {  // "a, b, c"
  std::vector<std::string> out;
  for (size_t at = 0; at < list.size();) {
    const size_t comma = std::min(list.find(", ", at), list.size());
    out.push_back(list.substr(at, comma - at));
    at = comma + 2;
  }
  return out;
}

}  // namespace

std::string script_grammar_json(const std::vector<std::string>& recipe_ids) {
  nlohmann::ordered_json commands = nlohmann::ordered_json::array();
  for (const ScriptCommandSpec& spec : grammar()) {
    nlohmann::ordered_json forms = nlohmann::ordered_json::array();
    for (const std::vector<ScriptArg>& form : spec.forms) {
      nlohmann::ordered_json args = nlohmann::ordered_json::array();
      for (const ScriptArg& arg : form) {
        nlohmann::ordered_json a = {{"name", arg.name}, {"kind", kind_name(arg.kind)}};
        switch (arg.kind) {
          case ScriptArgKind::Count:
            a["least"] = arg.least;
            a["most"] = arg.most;
            break;
          case ScriptArgKind::Number:
            a["least"] = arg.number_least;
            a["most"] = arg.number_most;
            break;
          case ScriptArgKind::Head:
            a["attention"] = {to_string(AttentionKind::Encoder), to_string(AttentionKind::Decoder),
                              to_string(AttentionKind::Cross)};
            a["least"] = 1;
            break;
          case ScriptArgKind::Recipe:
            a["words"] = recipe_ids;
            break;
          default:
            break;
        }
        if (!arg.words.empty()) a["words"] = arg.words;
        if (*arg.extension) a["extension"] = arg.extension;
        if (*arg.language) a["language"] = arg.language;
        args.push_back(std::move(a));
      }
      forms.push_back(std::move(args));
    }
    commands.push_back({{"name", spec.name}, {"arguments", arity_name(spec.arity)}, {"forms", std::move(forms)}});
  }
  const nlohmann::ordered_json grammar_json = {
      {"format", "stepformer script grammar"},
      {"version", 1},
      {"commands", std::move(commands)},
      {"stages", split_list(stage_names())},
      {"limits", {{"script_bytes", kMaxScriptBytes}}},
  };
  return grammar_json.dump(1) + "\n";
}

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
    const ScriptCommandSpec* spec = find_command(c.name);
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
