// The script grammar (gui/script/script_parse.h script_grammar()): every command the table describes is taken by
// the parser with arguments made from its kinds, and refused with one out of its range or of the wrong count;
// `stepformer --script-grammar` prints the same table as JSON, without a display; and the monkey test's generator
// (tests/monkey/monkey_script.py), which reads that JSON, decides which lines the parser refuses as the parser does.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app_under_xvfb.h"
#include "gui/script/script_parse.h"
#include "gui/stages.h"
#include "gui/text/text.h"
#include "../unit/command_run.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

// A word each kind takes (`variant` picks another where the kind has several: a range's other end).
std::string valid_word(const ScriptArg& arg, int variant) {
  switch (arg.kind) {
    case ScriptArgKind::Count: return std::to_string(variant % 2 ? arg.most : arg.least);
    case ScriptArgKind::Number: return number_text("%g", variant % 2 ? arg.number_most : arg.number_least);
    case ScriptArgKind::Switch:
    case ScriptArgKind::Keyword: return arg.words.at(static_cast<size_t>(variant) % arg.words.size());
    case ScriptArgKind::Stage: {
      const std::string names = stage_names();
      return variant % 2 ? names.substr(names.rfind(' ') + 1) : names.substr(0, names.find(','));
    }
    case ScriptArgKind::Head: return variant % 2 ? "cross.6.8" : "enc.1.1";
    case ScriptArgKind::Word: return "Hund";
    case ScriptArgKind::Recipe: return "classroom";
    case ScriptArgKind::LanguagePair: return variant % 2 ? "deu-en" : "de-en";
    case ScriptArgKind::Text: return variant % 2 ? "Zwei Hunde spielen im Schnee ." : "ein Wort";
    case ScriptArgKind::ModelPath: return "models/de en.safetensors";
    case ScriptArgKind::OutputPath: return std::string("shot") + arg.extension;
    case ScriptArgKind::Checkpoint: return std::string("run") + arg.extension;
    case ScriptArgKind::Strategy: return "beam 4";
  }
  return "";
}

// Words a kind refuses: out of its range, not one of its words. None for a kind that takes any word.
std::vector<std::string> invalid_words(const ScriptArg& arg) {
  switch (arg.kind) {
    case ScriptArgKind::Count:
      return {std::to_string(arg.least - 1), std::to_string(arg.most + 1), "x", "1.5"};
    case ScriptArgKind::Number:
      return {number_text("%g", arg.number_least / 2), number_text("%g", arg.number_most * 2), "x", "nan"};
    case ScriptArgKind::Switch:
    case ScriptArgKind::Keyword: return {arg.words.front() + "x", "ON", "maybe"};
    case ScriptArgKind::Stage: return {"no-such-stage", "Tokens"};
    case ScriptArgKind::Head: return {"enc.0.1", "enc.1", "encoder.1.1", "enc.1.-1"};
    case ScriptArgKind::LanguagePair: return {"deutsch", "d-e", "de_en"};
    default: return {};
  }
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words)
    if (!w.empty()) out += (out.empty() ? "" : " ") + w;
  return out;
}

// Parses one line strictly: the command, or the problem (and whether every message was filled exactly).
struct OneLine {
  std::optional<ScriptCommand> command;
  std::string error;
};
OneLine parse_line(const std::string& line) {
  OneLine r;
  const auto script = parse_script(line + "\n", "s", r.error);
  if (script && script->commands.size() == 1) r.command = script->commands.front();
  return r;
}

TEST(ScriptGrammar, EveryCommandIsTakenWithArgumentsMadeFromItsKinds) {
  reset_text_argument_errors();
  std::set<std::string> names;
  for (const ScriptCommandSpec& spec : script_grammar()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name << " is in the grammar twice";
    ASSERT_FALSE(spec.forms.empty()) << spec.name;
    for (const std::vector<ScriptArg>& form : spec.forms)
      for (int variant = 0; variant < 2; ++variant) {
        std::vector<std::string> words;
        for (const ScriptArg& arg : form) words.push_back(valid_word(arg, variant));
        const std::string line = join({spec.name, join(words)});
        const OneLine r = parse_line(line);
        ASSERT_TRUE(r.command) << "'" << line << "' is refused: " << r.error;
        EXPECT_EQ(r.command->name, spec.name);
        const bool whole_line = spec.arity == ScriptArity::Line || spec.arity == ScriptArity::LineOrNone;
        EXPECT_EQ(r.command->args, whole_line ? std::vector<std::string>{join(words)} : words) << line;
      }
    // A command with no words, where that is its rule (step: one; caption: hides the caption).
    if (spec.arity == ScriptArity::WordOrNone || spec.arity == ScriptArity::LineOrNone) {
      const OneLine r = parse_line(spec.name);
      ASSERT_TRUE(r.command) << spec.name << " alone is refused: " << r.error;
      EXPECT_TRUE(r.command->args.empty());
    }
  }
  EXPECT_EQ(text_argument_errors(), 0);
}

TEST(ScriptGrammar, EveryCommandRefusesAnArgumentOutOfItsRangeOrCount) {
  reset_text_argument_errors();
  for (const ScriptCommandSpec& spec : script_grammar()) {
    // An argument its kind refuses, in each place of each form, the others valid.
    int refusable = 0;
    for (const std::vector<ScriptArg>& form : spec.forms)
      for (size_t i = 0; i < form.size(); ++i)
        for (const std::string& bad : invalid_words(form[i])) {
          ++refusable;
          std::vector<std::string> words;
          for (size_t j = 0; j < form.size(); ++j) words.push_back(j == i ? bad : valid_word(form[j], 0));
          const std::string line = std::string(spec.name) + " " + join(words);
          const OneLine r = parse_line(line);
          EXPECT_FALSE(r.command) << "'" << line << "' is taken";
          EXPECT_EQ(r.error.rfind("s:1: ", 0), 0u) << line << ": " << r.error;
          // A count's message names its range, where the message has one.
          if (form[i].kind == ScriptArgKind::Count && spec.forms.size() == 1 && form[i].problem &&
              !(form[i].least == 1 && bad == "0")) {
            const auto p = placeholders(*form[i].problem);
            if (std::find(p.begin(), p.end(), "most") != p.end()) {
              EXPECT_NE(r.error.find(std::to_string(form[i].most)), std::string::npos) << line << ": " << r.error;
            }
          }
        }
    // The wrong number of words: one more than its forms take, or none where it needs some.
    std::string wrong_count = spec.name;
    switch (spec.arity) {
      case ScriptArity::Words:
      case ScriptArity::WordOrNone: {
        std::vector<std::string> words;
        for (const ScriptArg& arg : spec.forms.front()) words.push_back(valid_word(arg, 0));
        words.push_back(words.empty() ? "1" : words.back());
        if (spec.arity == ScriptArity::WordOrNone) words.push_back("1");
        wrong_count += " " + join(words);
        break;
      }
      case ScriptArity::LineOfWords:
        wrong_count += " " + join(std::vector<std::string>(8, "1"));
        break;
      default:
        break;  // the command alone
    }
    if (spec.arity == ScriptArity::LineOrNone) {  // caption: any rest of the line, or none
      EXPECT_EQ(refusable, 0) << spec.name;
      continue;
    }
    const OneLine r = parse_line(wrong_count);
    EXPECT_FALSE(r.command) << "'" << wrong_count << "' is taken";
    EXPECT_NE(r.error.find(spec.name), std::string::npos) << "the message names the command: " << r.error;
  }
  EXPECT_EQ(text_argument_errors(), 0) << "a message of the grammar got values that do not fit it";
}

// Layers and heads count from 1: a 0 is named as the old numbering, not as a number out of range.
TEST(ScriptGrammar, ZeroForALayerOrHeadIsNamedAsTheOldNumbering) {
  for (const auto& [line, command] : {std::pair{"layer 0", "layer"}, std::pair{"head 0", "head"}}) {
    const OneLine r = parse_line(line);
    EXPECT_FALSE(r.command);
    EXPECT_EQ(r.error, "s:1: " + tr(T::script_counts_from_one, {{"command", command}})) << r.error;
  }
}

// A command that takes a count or nothing says how many it takes at most; one that takes a fixed number, that
// number.
TEST(ScriptGrammar, AWrongArgumentCountSaysHowManyAreTaken) {
  OneLine r = parse_line("step 1 2");
  EXPECT_FALSE(r.command);
  EXPECT_EQ(r.error, "s:1: 'step' takes at most 1 argument(s), got 2");
  r = parse_line("hover 3");
  EXPECT_FALSE(r.command);
  EXPECT_EQ(r.error, "s:1: 'hover' takes 2 argument(s), got 1");
}

using RunResult = sf::testing::CommandRun;
RunResult run(const std::string& command) { return sf::testing::run_command(command); }

TEST(ScriptGrammar, TheAppPrintsItAsJsonWithoutADisplay) {
  const RunResult r = run(std::string("env -u DISPLAY -u WAYLAND_DISPLAY ") + STEPFORMER_APP_PATH + " --script-grammar");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json grammar = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_FALSE(grammar.is_discarded()) << "not JSON:\n" << r.output.substr(0, 2000);
  ASSERT_TRUE(grammar["commands"].is_array());
  const std::vector<ScriptCommandSpec>& table = script_grammar();
  ASSERT_EQ(grammar["commands"].size(), table.size());
  std::string listed;
  for (size_t i = 0; i < table.size(); ++i) {
    const nlohmann::json& c = grammar["commands"][i];
    listed += (listed.empty() ? "" : ", ") + c["name"].get<std::string>();
    EXPECT_EQ(c["forms"].size(), table[i].forms.size()) << table[i].name;
    for (size_t f = 0; f < table[i].forms.size(); ++f)
      for (size_t a = 0; a < table[i].forms[f].size(); ++a) {
        const ScriptArg& arg = table[i].forms[f][a];
        const nlohmann::json& j = c["forms"][f][a];
        EXPECT_EQ(j["name"], arg.name) << table[i].name;
        if (arg.kind == ScriptArgKind::Count) {
          EXPECT_EQ(j["kind"], "count") << table[i].name;
          EXPECT_EQ(j["least"], arg.least) << table[i].name;
          EXPECT_EQ(j["most"], arg.most) << table[i].name;
        }
        if (arg.kind == ScriptArgKind::Recipe) {
          EXPECT_FALSE(j["words"].empty()) << "the recipes' names are listed";
        }
      }
  }
  EXPECT_EQ(listed, script_command_names()) << "every command, in the order --help lists them";
  std::string stages;
  for (const auto& s : grammar["stages"]) stages += (stages.empty() ? "" : ", ") + s.get<std::string>();
  EXPECT_EQ(stages, stage_names());
  EXPECT_EQ(grammar["limits"]["script_bytes"], kMaxScriptBytes);
}

// The monkey test's generator reads the grammar from the app and says which of its lines the parser refuses
// (its manifest's invalid_lines): the parser, reading the script as a lesson, must refuse exactly those.
TEST(ScriptGrammar, TheMonkeyGeneratorAgreesWithTheParser) {
  if (run("command -v python3 >/dev/null 2>&1").exit_code != 0) GTEST_SKIP() << "no python3";
  const fs::path dir = testing::fresh_output_dir("script_grammar_monkey");
  const std::string lesson = (dir / "monkey.lesson").string();
  for (const int seed : {1, 2}) {
    const RunResult r = run("python3 " + std::string(STEPFORMER_SOURCE_DIR) + "/tests/monkey/monkey_script.py --seed " +
                            std::to_string(seed) + " --commands 3000 --out " + lesson + " --app " +
                            STEPFORMER_APP_PATH + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ifstream manifest_file(lesson + ".json");
    const nlohmann::json manifest = nlohmann::json::parse(manifest_file);
    std::set<int> expected;
    for (const auto& n : manifest["invalid_lines"]) expected.insert(n.get<int>());
    std::string error;
    const auto script = parse_script_file(lesson, error, ScriptParse::Lesson);
    ASSERT_TRUE(script) << error;
    std::set<int> refused;
    for (const ScriptCommand& c : script->commands)
      if (!c.known) refused.insert(c.line);
    std::vector<int> only_refused, only_expected;
    std::set_difference(refused.begin(), refused.end(), expected.begin(), expected.end(), std::back_inserter(only_refused));
    std::set_difference(expected.begin(), expected.end(), refused.begin(), refused.end(), std::back_inserter(only_expected));
    EXPECT_TRUE(only_refused.empty() && only_expected.empty())
        << "seed " << seed << ": the parser refuses " << only_refused.size() << " line(s) the generator took for valid"
        << (only_refused.empty() ? "" : " (the first: line " + std::to_string(only_refused.front()) + ")") << " and takes "
        << only_expected.size() << " it took for invalid"
        << (only_expected.empty() ? "" : " (the first: line " + std::to_string(only_expected.front()) + ")");
    EXPECT_GT(expected.size(), 100u) << "the generator wrote few lines the parser refuses";
    // Each command of the grammar is written at least once with arguments the parser takes.
    for (const ScriptCommandSpec& spec : script_grammar())
      if (std::string(spec.name) != "pause" && std::string(spec.name) != "quit") {
        EXPECT_TRUE(manifest["per_command"].contains(spec.name)) << "seed " << seed << ": no valid '" << spec.name << "'";
      }
  }
}

}  // namespace
}  // namespace sf::gui
