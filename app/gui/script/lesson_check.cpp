#include "gui/script/lesson_check.h"

#include <imgui.h>

#include <set>
#include <string>
#include <vector>

#include "gui/app.h"
#include "gui/headless_imgui.h"
#include "gui/render/math_text.h"
#include "gui/script/script.h"
#include "util/printable.h"

namespace sf::gui {

namespace {

// Dear ImGui without a window for the length of the check (the panels lay out as they would; nothing is drawn).
struct HeadlessImGui {
  HeadlessImGui() { start_headless_imgui(); }
  ~HeadlessImGui() { ImGui::DestroyContext(); }
};

std::string one_line(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (c == '\n') c = ' ';
  return out;
}

}  // namespace

int check_lesson(const AppOptions& options, std::FILE* out) {
  std::string parse_errors;
  const std::optional<Script> script = parse_script_file(options.check_lesson_path, parse_errors, ScriptParse::Lesson);
  if (!script) {
    std::fprintf(out, "%s\n", printable_lines(parse_errors).c_str());
    return 2;
  }
  // Problems are counted once per line: a line at fault is listed here and again when the replay skips it.
  std::set<std::string> faulty_lines;
  for (const ScriptCommand& c : script->commands)
    if (!c.known) faulty_lines.insert("script line " + std::to_string(c.line) + ": ");
  int problems = static_cast<int>(script->problems.size());
  const auto counts = [&](const std::string& line) {
    if (line.find(": not written in a check") != std::string::npos) return false;
    if (line.find(": not run in a check") != std::string::npos) return false;
    for (const std::string& prefix : faulty_lines)
      if (line.rfind(prefix, 0) == 0) return false;
    return true;
  };
  std::fprintf(out, "lesson %s: %zu commands, %d lines at fault\n", printable(options.check_lesson_path).c_str(),
               script->commands.size(), problems);
  for (const std::string& p : script->problems) std::fprintf(out, "  %s\n", printable(p).c_str());

  HeadlessImGui imgui;
  AppOptions app_options = options;
  app_options.no_settings = true;
  App app(app_options);
  app.finish_loading();
  if (!app.state().model()) {
    std::fprintf(out, "the model '%s' does not load: %s\n", printable(options.model_path).c_str(),
                 printable_lines(app.last_load_error()).c_str());
    return 1;
  }
  std::fprintf(out, "model %s\n", printable(app.state().model_path()).c_str());
  ScriptRunner runner(*script, /*interactive=*/false);
  runner.set_dry_run(true);
  runner.set_write_folder(options.allow_write_folder);  // (as --lesson would: the folder it may write to)
  std::vector<std::string> log, since_pause;
  int pauses = 0;
  // What the commands since the last pause said: skips are problems, exports not written are notes.
  const auto report = [&]() {
    for (const std::string& line : since_pause) {
      const bool note = line.find(": not written in a check") != std::string::npos ||
                        line.find(": not run in a check") != std::string::npos;
      std::fprintf(out, "  %s%s\n", note ? "" : "problem: ", printable(line).c_str());
      problems += counts(line);
    }
    since_pause.clear();
  };
  // A lesson runs a command or a few per frame; a generous bound keeps a check from running forever.
  for (int frame = 0; frame < 200000 && !runner.finished(); ++frame) {
    runner.before_frame(app, log);
    for (const std::string& line : log) since_pause.push_back(line);
    log.clear();
    if (app.loading()) app.finish_loading();  // a `model` line: the check waits for it without frames
    ImGui::NewFrame();
    app.frame();
    ImGui::Render();
    if (runner.pauses_passed() != pauses) {
      pauses = runner.pauses_passed();
      std::fprintf(out, "pause %d (line %d): stage %s; caption: %s\n", pauses, runner.last_pause_line(),
                   stage_name(app.stage()), app.caption().empty() ? "(none)" : printable(one_line(math_plain(app.caption()))).c_str());
      report();
    }
  }
  report();  // after the last pause
  if (!runner.finished()) {
    std::fprintf(out, "problem: the lesson did not finish\n");
    ++problems;
  }
  std::fprintf(out, "%d pauses, %d problem%s\n", pauses, problems, problems == 1 ? "" : "s");
  return problems > 0 ? 1 : 0;
}

}  // namespace sf::gui
