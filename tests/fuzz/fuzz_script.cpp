// libFuzzer target: the script and lesson parser (app/gui/script/script_parse.cpp), on any bytes, as
// `stepformer --script FILE` (ScriptParse::Strict) and `--lesson FILE` (ScriptParse::Lesson) read them; also
// parse_ui_scale and parse_head_ref, which the parser calls, on the first line.
//
// A bug: a crash, a sanitizer report (ASan, UBSan, a leak), a hang, any exception escaping (parse_script
// reports every problem in its result and throws nothing; parse_head_ref throws sf::Error only), or a broken
// invariant checked below (abort()):
//   - Strict returns nullopt exactly when there are problems (then `error` lists them, else it is empty);
//   - Lesson always returns the script; its problems are the lines marked unknown, one each, and `error` lists
//     them; when Strict accepts the text, Lesson gives the same commands, all known;
//   - every known command's name is one of sf::gui::script_command_names(); line numbers are from 1, rising.
// Run by tests/run_fuzz.sh (seed corpus: tests/fuzz/corpus/script/).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>

#include "gui/options.h"
#include "gui/script/script_parse.h"
#include "transformer/interventions.h"
#include "util/error.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

const std::set<std::string>& command_names() {
  static const std::set<std::string> names = [] {
    std::set<std::string> out;
    const std::string list = sf::gui::script_command_names() + ", ";
    for (size_t at = 0; at < list.size();) {
      const size_t comma = list.find(", ", at);
      out.insert(list.substr(at, comma - at));
      at = comma + 2;
    }
    return out;
  }();
  return names;
}

void check_commands(const sf::gui::Script& script) {
  int line = 0;
  for (const sf::gui::ScriptCommand& c : script.commands) {
    check(c.line > line);
    line = c.line;
    check(!c.name.empty());
    if (c.known) {
      check(command_names().count(c.name) == 1);
      check(c.problem.empty());
    } else {
      check(!c.problem.empty());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  std::string strict_error = "not cleared";
  const std::optional<sf::gui::Script> strict =
      sf::gui::parse_script(text, "fuzz", strict_error, sf::gui::ScriptParse::Strict);
  if (strict) {
    check(strict->problems.empty() && strict_error.empty());
    check_commands(*strict);
    for (const auto& c : strict->commands) check(c.known);
  } else {
    check(!strict_error.empty());
  }

  std::string lesson_error = "not cleared";
  const std::optional<sf::gui::Script> lesson =
      sf::gui::parse_script(text, "fuzz", lesson_error, sf::gui::ScriptParse::Lesson);
  check(lesson.has_value());
  check_commands(*lesson);
  size_t unknown = 0;
  for (const auto& c : lesson->commands) unknown += c.known ? 0 : 1;
  check(unknown == lesson->problems.size());
  check(lesson_error.empty() == lesson->problems.empty());
  check(strict.has_value() == lesson->problems.empty());
  if (strict) {
    check(strict->commands.size() == lesson->commands.size());
    for (size_t i = 0; i < strict->commands.size(); ++i) {
      const auto &a = strict->commands[i], &b = lesson->commands[i];
      check(a.line == b.line && a.name == b.name && a.args == b.args && b.known);
    }
  }

  // The helpers the parser uses, on the first line as a whole.
  const std::string first = text.substr(0, text.find('\n'));
  float scale = 0;
  if (sf::gui::parse_ui_scale(first, &scale)) check(scale >= sf::gui::kMinUiScale && scale <= sf::gui::kMaxUiScale);
  try {
    // The layer and head may be any int ("enc.-1.0" parses): validate_interventions checks them per model.
    (void)sf::parse_head_ref(first);
  } catch (const sf::Error&) {
  }
  return 0;
}
