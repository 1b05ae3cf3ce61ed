// The script and lesson parser (the commands are listed in gui/script/script.h): text in, commands out, every
// problem named with its line. No window, no ImGui: the fuzzer (tests/fuzz/fuzz_script.cpp) and the lesson
// check use it as the app does.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gui/text/text.h"

namespace sf::gui {

// The largest script or lesson read (the walkthrough is 6 kB), and the largest count a command takes (rows,
// columns, positions, pixels, frames): checked when the file is parsed, each with a message.
inline constexpr uint64_t kMaxScriptBytes = 1 << 20;
inline constexpr int kMaxScriptCount = 100000;
inline constexpr int kMaxWaitFrames = 36000;  // ten minutes at 60 frames a second
inline constexpr int kMaxSteps = 10000;

// [the grammar] Every command a script may use, described once: how its arguments are read from the line and
// what each may be. The parser checks each line against its command's row (parse_script below); `stepformer
// --script-grammar` prints the table as JSON (script_grammar_json) for tools that write scripts, such as the
// monkey test's generator (tests/monkey/monkey_script.py). A new command is a row here and its run in script.cpp.

// What one argument may be.
enum class ScriptArgKind : uint8_t {
  Count,         // a whole number of at most 9 digits, from `least` to `most`
  Number,        // a number, all of the word as strtof reads it, from `number_least` to `number_most`
  Switch,        // on or off
  Keyword,       // one of `words`
  Stage,         // a stage's name (gui/stages.h stage_names())
  Head,          // KIND.L.H, KIND enc, dec or cross, layers and heads from 1 (transformer/interventions.h)
  Word,          // any one word (`language` says which words make sense: a translation's, for `force`)
  Recipe,        // a training recipe's id: any word here, checked when the line runs (gui/training.h)
  LanguagePair,  // SRC-TGT: two codes of 2 or 3 letters, "de-en"
  Text,          // the rest of the line as it is: a sentence, a caption, a reference (`words`: ones that mean more)
  ModelPath,     // the rest of the line: a model file or Hugging Face Marian folder to read
  OutputPath,    // a file to write (under the folder a script may write, never replacing one), `extension`
  Checkpoint,    // a model file a training run resumes from, if it is there, and saves to (under that folder)
  Strategy,      // the rest of the line: a decoding strategy, checked when the line runs
};

// How a command's arguments are read from its line.
enum class ScriptArity : uint8_t {
  Words,        // the line's words, as many as its form has (each form of the command has as many)
  WordOrNone,   // no word, or the one word of its form
  Line,         // the rest of the line as one argument, not empty
  LineOrNone,   // the rest of the line as one argument, or nothing
  LineOfWords,  // the rest of the line, not empty, split into words that fit one of its forms (of any length)
};

struct ScriptArg {
  std::string name;                         // as the user guide writes it: "ROW", "KIND.L.H", "on|off"
  ScriptArgKind kind = ScriptArgKind::Word;
  int least = 0, most = 0;                  // Count
  float number_least = 0, number_most = 0;  // Number
  std::vector<std::string> words{};         // Switch, Keyword: what it takes; Text: words with a meaning ("-")
  const char* extension = "";               // OutputPath, Checkpoint: the file's kind (".png")
  const char* language = "";                // Text, Word: "source", "target" or "any", the words it is in
  std::optional<T> problem{};               // the message when it does not fit (a command with one form)
};

struct ScriptCommandSpec {
  const char* name;
  ScriptArity arity;
  std::vector<std::vector<ScriptArg>> forms;  // what its arguments may be: one list (empty: none), or several
  std::optional<T> problem{};  // with several forms, the message when the line fits none ({given}: the line's rest)
};

// The grammar, in the order --help lists the commands.
const std::vector<ScriptCommandSpec>& script_grammar();

// The grammar as JSON (an object: "commands", each with its "arguments" rule and "forms"; "stages"; "limits").
// `recipe_ids`: what a Recipe argument runs with (gui/training.h training_recipe_ids(), given by the app: the
// parser does not link the training code).
std::string script_grammar_json(const std::vector<std::string>& recipe_ids);

struct ScriptCommand {
  int line = 0;
  std::string name;
  std::vector<std::string> args;  // the words after the name ("sentence" keeps the rest of the line as one)
  bool known = true;              // false: a lesson's line that cannot run (args: the rest), skipped when reached
  std::string problem;            // why (an unknown command, bad arguments)
};

struct Script {
  std::vector<ScriptCommand> commands;
  std::vector<std::string> problems;  // "FILE:LINE: problem" for every line at fault, in order
};

// Every command a script may use, comma-separated, from the table the parser reads (for --help and messages).
std::string script_command_names();

// Strict: an unknown command is an error (scripts, tests). Lesson: it is kept, marked unknown.
enum class ScriptParse { Strict, Lesson };

// Parses a script file and lists every problem, one "FILE:LINE: problem" a line, in `error` (and in
// Script::problems). Strict: any problem returns nullopt. Lesson: the lesson is returned with the lines at fault
// marked unknown (skipped when reached); `error` says what they are, for the teacher, when it opens.
std::optional<Script> parse_script_file(const std::string& path, std::string& error,
                                        ScriptParse mode = ScriptParse::Strict);
std::optional<Script> parse_script(const std::string& text, const std::string& origin, std::string& error,
                                   ScriptParse mode = ScriptParse::Strict);

// A UI scale, 0.5 to 4 (kMinUiScale .. kMaxUiScale); false for anything else.
bool parse_ui_scale(const std::string& text, float* out);

}  // namespace sf::gui
