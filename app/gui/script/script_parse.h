// The script and lesson parser (the commands are listed in gui/script/script.h): text in, commands out, every
// problem named with its line. No window, no ImGui: the fuzzer (tests/fuzz/fuzz_script.cpp) and the lesson
// check use it as the app does.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sf::gui {

// The largest script or lesson read (the walkthrough is 6 kB), and the largest count a command takes (rows,
// columns, positions, pixels, frames): checked when the file is parsed, each with a message.
inline constexpr uint64_t kMaxScriptBytes = 1 << 20;
inline constexpr int kMaxScriptCount = 100000;
inline constexpr int kMaxWaitFrames = 36000;  // ten minutes at 60 frames a second
inline constexpr int kMaxSteps = 10000;

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
