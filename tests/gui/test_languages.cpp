// The app in English, Korean and Chinese (issue #49): the language chosen (--language, the locale, the settings,
// the script's `language`), the help in each, the lessons in each, and each language's screens as a class sees
// them: every glyph drawn from a font (none as the replacement mark), every stage within its room, normally at
// 1600x1000 and presenting at 1280x800. The fonts: a character any installed font has is drawn from it (Hangul in
// an English window, from a font found by scanning); one that none has is the replacement mark, named once.
#include <gtest/gtest.h>

#include <cstdio>
#include <sys/stat.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "app_under_xvfb.h"
#include "gui/options.h"
#include "gui/panels/lessons_popup.h"
#include "gui/script/script_parse.h"
#include "gui/settings.h"
#include "gui/stages.h"
#include "gui/text/glyphs.h"
#include "gui/text/line_breaks.h"
#include "gui/text/text.h"
#include "layout_checks.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* const kCodes[] = {"en", "ko", "zh"};
const char* const kCjkFont = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc";  // fonts-wqy-microhei
const char* const kLatinFont = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

bool cjk_font_installed() { return fs::exists(kCjkFont) && fs::exists(kLatinFont); }

// How many of `text`'s characters are Hangul syllables, and Han characters.
int hangul_in(const std::string& text) {
  int n = 0;
  for (const char32_t c : utf8_code_points(text)) n += c >= 0xAC00 && c <= 0xD7A3;
  return n;
}
int han_in(const std::string& text) {
  int n = 0;
  for (const char32_t c : utf8_code_points(text)) n += c >= 0x4E00 && c <= 0x9FFF;
  return n;
}

// [SECTION] the census of characters the atlas must hold

TEST(GlyphCensus, DecodesUtf8AsImGuiDrawsIt) {
  EXPECT_EQ(utf8_code_points("a\xC3\xA9\xED\x95\x9C\xF0\x9F\x98\x80"),
            (std::vector<char32_t>{U'a', U'\u00E9', U'\uD55C', U'\U0001F600'}));
  // Bytes that are not UTF-8 each give U+FFFD: a lone continuation, an overlong '/', a surrogate, past U+10FFFF,
  // a sequence cut short.
  for (const std::string bad : {"\x80", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82"}) {
    const std::vector<char32_t> cps = utf8_code_points(bad);
    ASSERT_FALSE(cps.empty());
    for (const char32_t c : cps) EXPECT_EQ(c, U'\uFFFD') << bad.size();
  }
}

TEST(GlyphCensus, ANewCharacterRaisesTheGenerationOnceAndAsciiNever) {
  forget_noted_glyphs();
  const uint64_t start = glyphs_generation();
  note_glyphs("plain ASCII, no new glyph");
  EXPECT_EQ(glyphs_generation(), start);
  note_glyphs("\xEC\x96\xB4\xED\x85\x90\xEC\x85\x98");  // 어텐션
  const uint64_t after = glyphs_generation();
  EXPECT_GT(after, start);
  note_glyphs("\xEC\x96\xB4\xED\x85\x90\xEC\x85\x98");
  EXPECT_EQ(glyphs_generation(), after) << "characters already noted are not new";
  const std::vector<char32_t> noted = noted_glyphs();
  EXPECT_EQ(noted, (std::vector<char32_t>{U'\uC158', U'\uC5B4', U'\uD150'}));
}

TEST(GlyphCensus, ChoosingALanguageNotesItsTableAndTrNotesItsValues) {
  set_language(Language::English);
  set_language(Language::Korean);
  std::set<char32_t> noted;
  for (const char32_t c : noted_glyphs()) noted.insert(c);
  for (size_t i = 0; i < kTextCount; ++i)
    for (const char32_t c : utf8_code_points(table_text(Language::Korean, static_cast<T>(i))))
      if (c >= 0x80) {
        ASSERT_TRUE(noted.count(c)) << "U+" << std::hex << static_cast<unsigned>(c);
      }
  // A placeholder's value (a file name, a token) is noted as it is put in.
  (void)tr(T::lessons_none, {{"folder", "/tmp/\xE8\xAF\xBE\xE7\xA8\x8B"}});  // 课程
  for (const char32_t c : utf8_code_points("\xE8\xAF\xBE\xE7\xA8\x8B")) {
    bool found = false;
    for (const char32_t n : noted_glyphs()) found |= n == c;
    EXPECT_TRUE(found);
  }
  set_language(Language::English);
}

// [SECTION] where lines break (gui/text/line_breaks.h)

// One column a character, two for Hangul and Han (a terminal's, and a fixed-width font's, measure).
float cols(char32_t c) { return (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0x3000 && c <= 0x9FFF) || (c >= 0xFF00 && c <= 0xFFEF) ? 2.0f : 1.0f; }
std::vector<std::string> lines(const std::string& text, float width) { return break_lines(text, width, cols); }

TEST(LineBreaks, EnglishAndKoreanBreakAtSpacesOnly) {
  EXPECT_EQ(lines("the quick brown fox", 10), (std::vector<std::string>{"the quick", "brown fox"}));
  // 어텐션 가중치 (7 syllables, 14 columns + a space): a word is never cut while it fits a line.
  EXPECT_EQ(lines("\xEC\x96\xB4\xED\x85\x90\xEC\x85\x98 \xEA\xB0\x80\xEC\xA4\x91\xEC\xB9\x98", 8),
            (std::vector<std::string>{"\xEC\x96\xB4\xED\x85\x90\xEC\x85\x98", "\xEA\xB0\x80\xEC\xA4\x91\xEC\xB9\x98"}));
  EXPECT_EQ(lines("", 10), (std::vector<std::string>{""}));
  EXPECT_EQ(lines("one\ntwo", 80), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(lines("  indented", 80), (std::vector<std::string>{"  indented"}));
}

TEST(LineBreaks, ANumberIsNeverCutWhereItFitsALine) {
  // ImGui 1.86 wraps after any '.', so this line ended in "-0." with "01" on the next.
  for (float width = 8; width <= 40; ++width)
    for (const std::string& line : lines("mean -0.01 .. -0.01, spread 1.00 .. 1.01", width)) {
      EXPECT_NE(line.substr(line.size() >= 3 ? line.size() - 3 : 0), "-0.") << width;
      EXPECT_NE(line.rfind("01", 0), 0u) << width << ": '" << line << "'";
    }
  // In Chinese too: 均值 -0.01 .. -0.01，标准差
  const std::string zh = "\xE5\x9D\x87\xE5\x80\xBC -0.01 .. -0.01\xEF\xBC\x8C\xE6\xA0\x87\xE5\x87\x86\xE5\xB7\xAE";
  for (float width = 8; width <= 30; ++width)
    for (const std::string& line : lines(zh, width)) {
      EXPECT_NE(line.substr(line.size() >= 3 ? line.size() - 3 : 0), "-0.") << width;
      EXPECT_NE(line.rfind("01", 0), 0u) << width << ": '" << line << "'";
    }
}

TEST(LineBreaks, ChineseBreaksBetweenCharactersButNotBeforeAClosingMark) {
  // 归一化后：均值 at 4 columns (two characters a line): "后：" stays together (no line begins with "："),
  // so "化" goes alone.
  const std::vector<std::string> got = lines("\xE5\xBD\x92\xE4\xB8\x80\xE5\x8C\x96\xE5\x90\x8E\xEF\xBC\x9A\xE5\x9D\x87\xE5\x80\xBC", 4);
  for (const std::string& line : got) EXPECT_NE(line.rfind("\xEF\xBC\x9A", 0), 0u) << "a line begins with '\xEF\xBC\x9A'";
  EXPECT_EQ(got.front(), "\xE5\xBD\x92\xE4\xB8\x80");
  // An opening bracket never ends a line: 模型（model） at 6 columns.
  for (const std::string& line : lines("\xE6\xA8\xA1\xE5\x9E\x8B\xEF\xBC\x88model\xEF\xBC\x89", 6)) {
    ASSERT_GE(line.size(), 3u);
    EXPECT_NE(line.substr(line.size() - 3), "\xEF\xBC\x88") << line;
  }
  EXPECT_TRUE(cjk_break_between(U'\u6A21', U'\u578B'));
  EXPECT_FALSE(cjk_break_between(U'\u578B', U'\uFF0C'));
  EXPECT_FALSE(cjk_break_between(U'\uFF08', U'm'));
  EXPECT_FALSE(cjk_break_between(U'a', U'b'));
  EXPECT_FALSE(cjk_break_between(U'\uC5B4', U'\uD150')) << "Korean breaks at its spaces";
}

TEST(LineBreaks, EveryLineFitsUnlessOneCharacterIsWiderThanTheLine) {
  const std::string text = "A Transformer \xE6\xA8\xA1\xE5\x9E\x8B reads averyveryverylongwordwithoutspaces and "
                           "\xEB\x94\x94\xEC\xBD\x94\xEB\x8D\x94 writes.";
  for (float width = 1; width <= 60; ++width) {
    std::string joined;
    for (const std::string& line : lines(text, width)) {
      float w = 0;
      for (const char32_t c : utf8_code_points(line)) w += cols(c);
      if (utf8_code_points(line).size() > 1) {
        EXPECT_LE(w, width) << "'" << line << "' at " << width;
      }
      joined += line;
    }
    std::string squeezed;  // nothing lost but the spaces at the breaks
    for (const char c : text)
      if (c != ' ') squeezed += c;
    std::string got;
    for (const char c : joined)
      if (c != ' ') got += c;
    EXPECT_EQ(got, squeezed) << width;
  }
}

// [SECTION] choosing: the locale, --language, the settings

struct LocaleCase {
  const char* lc_all;
  const char* lang;
  Language expected;
};

TEST(SystemLanguage, FollowsTheLocaleWhereItIsOneOfTheThree) {
  const LocaleCase cases[] = {
      {"", "ko_KR.UTF-8", Language::Korean}, {"", "zh_CN.UTF-8", Language::Chinese},
      {"", "zh_SG", Language::Chinese},      {"", "zh", Language::Chinese},
      {"", "zh_TW.UTF-8", Language::English},  // Traditional: not the Simplified table
      {"", "de_DE.UTF-8", Language::English}, {"", "C", Language::English},
      {"", "kok_IN", Language::English},       // Konkani, not Korean
      {"ko_KR.UTF-8", "en_US.UTF-8", Language::Korean},  // LC_ALL first
      {"", "", Language::English},
  };
  const char* saved_all = std::getenv("LC_ALL");
  const char* saved_messages = std::getenv("LC_MESSAGES");
  const char* saved_lang = std::getenv("LANG");
  const std::string all = saved_all ? saved_all : "", messages = saved_messages ? saved_messages : "",
                    lang = saved_lang ? saved_lang : "";
  ::unsetenv("LC_MESSAGES");
  for (const LocaleCase& c : cases) {
    ::setenv("LC_ALL", c.lc_all, 1);
    ::setenv("LANG", c.lang, 1);
    EXPECT_EQ(system_language(), c.expected) << "LC_ALL=" << c.lc_all << " LANG=" << c.lang;
  }
  const auto restore = [](const char* name, const char* saved, const std::string& value) {
    if (saved) ::setenv(name, value.c_str(), 1);
    else ::unsetenv(name);
  };
  restore("LC_ALL", saved_all, all);
  restore("LC_MESSAGES", saved_messages, messages);
  restore("LANG", saved_lang, lang);
}

ParsedOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "stepformer");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return parse_app_options(static_cast<int>(argv.size()), argv.data());
}

TEST(LanguageOption, TakesTheThreeCodesAndRefusesAnyOther) {
  for (const char* code : kCodes) {
    const ParsedOptions p = parse({"--language", code});
    EXPECT_FALSE(p.exit_now) << code;
    EXPECT_EQ(p.options.language, code);
    EXPECT_TRUE(p.options.language_given);
  }
  for (const char* bad : {"ja", "KO", "zh_CN", "", "en "}) {
    const ParsedOptions p = parse({"--language", bad});
    EXPECT_TRUE(p.exit_now) << "'" << bad << "'";
    EXPECT_EQ(p.exit_code, 2);
  }
  EXPECT_TRUE(parse({"--language"}).exit_now) << "no value";
}

TEST(LanguageOption, TheLastSessionsLanguageFillsInOnlyWhatTheCommandLineLeftOpen) {
  Settings saved;
  saved.language = "zh";
  AppOptions none;
  apply_last_session(saved, none);
  EXPECT_EQ(none.language, "zh");
  ParsedOptions given = parse({"--language", "ko"});
  apply_last_session(saved, given.options);
  EXPECT_EQ(given.options.language, "ko");
  saved.language = "ja";  // a newer version's language: left to the locale
  AppOptions newer;
  apply_last_session(saved, newer);
  EXPECT_EQ(newer.language, "");
}

TEST(LanguageSettings, TheLanguageIsKeptAnOddOneIgnoredAndAWrongTypeRefusedByName) {
  Settings s;
  s.language = "ko";
  EXPECT_EQ(settings_from_json(settings_to_json(s)).language, "ko");
  EXPECT_FALSE(settings_to_json(Settings{}).contains("language")) << "none chosen: the locale decides";
  for (const char* newer : {"ja", "es-419", "zh-Hant-TW"}) {  // a newer version's: kept, the file not put aside
    json j = settings_to_json(Settings{});
    j["language"] = newer;
    EXPECT_EQ(settings_from_json(j).language, newer);
  }
  for (const std::string& odd : {std::string("ko\"; rm"), std::string(40, 'k')}) {  // not a tag: ignored
    json j = settings_to_json(Settings{});
    j["language"] = odd;
    EXPECT_EQ(settings_from_json(j).language, "") << odd;
  }
  for (const json& bad : {json(3), json::array(), json::object()}) {
    json j = settings_to_json(Settings{});
    j["language"] = bad;
    try {
      (void)settings_from_json(j);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("language"), std::string::npos) << e.what();
    }
  }
}

// [SECTION] --help in each language

// The columns a terminal gives `text`: two for Hangul, Han characters and full-width forms.
int columns_of(const std::string& text) {
  int n = 0;
  for (const char32_t c : utf8_code_points(text))
    n += ((c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF) || (c >= 0xAC00 && c <= 0xD7A3) ||
          (c >= 0xFF00 && c <= 0xFF60))
             ? 2
             : 1;
  return n;
}

std::string command_output(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  ::pclose(pipe);
  return out;
}

TEST(Help, EachLanguageListsEveryOptionWithinEightyColumns) {
  std::string english;
  for (const char* code : kCodes) {
    const std::string help = command_output(std::string("LC_ALL=C ") + STEPFORMER_APP_PATH + " --help --language " + code);
    ASSERT_FALSE(help.empty()) << code;
    if (std::string(code) == "en") english = help;
    else EXPECT_NE(help, english) << code << ": the help is not translated";
    if (std::string(code) == "ko") {
      EXPECT_GT(hangul_in(help), 300);
    }
    if (std::string(code) == "zh") {
      EXPECT_GT(han_in(help), 300);
    }
    for (const char* option : {"--model PATH", "--sentence TEXT", "--stage NAME", "--lesson FILE", "--language L",
                               "--present", "--ui-scale X", "--no-settings", "--help", "cross-attention",
                               "written-for", "xvfb-run -a", "$XDG_CONFIG_HOME"})
      EXPECT_NE(help.find(option), std::string::npos) << code << ": " << option;
    EXPECT_EQ(help.find('{'), std::string::npos) << code << ": a placeholder left in";
    EXPECT_EQ(help.find("\\$"), std::string::npos) << code << ": an escaped dollar left in";
    size_t start = 0;
    for (size_t end; (end = help.find('\n', start)) != std::string::npos; start = end + 1) {
      const std::string line = help.substr(start, end - start);
      EXPECT_LE(columns_of(line), 78) << code << ": '" << line << "'";
    }
  }
  // The locale's language when --language is not given.
  EXPECT_GT(hangul_in(command_output(std::string("LC_ALL=ko_KR.UTF-8 ") + STEPFORMER_APP_PATH + " --help")), 300);
}

// [SECTION] the lessons in each language

const std::string kLessons = std::string(STEPFORMER_SOURCE_DIR) + "/assets/lessons";

TEST(Lessons, EveryShippedLessonHasAKoreanAndAChineseVersionThatRunsTheSameCommands) {
  for (const char* name : {"walkthrough", "watch-it-learn", "why-masks-matter", "translator-to-gpt", "three-shapes",
                           "attention-is-not-explanation"}) {
    std::string error;
    const auto english = parse_script_file(kLessons + "/" + name + ".lesson", error, ScriptParse::Lesson);
    ASSERT_TRUE(english) << error;
    EXPECT_EQ(error, "") << name;
    const auto commands_of = [](const Script& s) {
      std::vector<std::pair<std::string, std::vector<std::string>>> out;
      for (const ScriptCommand& c : s.commands)
        if (c.name != "caption" && c.name != "title" && c.name != "language") out.push_back({c.name, c.args});
      return out;
    };
    const auto captions_of = [](const Script& s) {
      std::vector<std::string> out;
      for (const ScriptCommand& c : s.commands)
        if (c.name == "caption") out.push_back(c.args.empty() ? "" : c.args[0]);
      return out;
    };
    for (const char* code : {"ko", "zh"}) {
      const std::string path = kLessons + "/" + name + "." + code + ".lesson";
      const auto translated = parse_script_file(path, error, ScriptParse::Lesson);
      ASSERT_TRUE(translated) << path << ": " << error;
      EXPECT_EQ(error, "") << path;
      EXPECT_EQ(commands_of(*translated), commands_of(*english)) << path;
      const std::vector<std::string> en = captions_of(*english), tr_captions = captions_of(*translated);
      ASSERT_EQ(tr_captions.size(), en.size()) << path;
      for (size_t i = 0; i < en.size(); ++i) {
        if (en[i].empty()) continue;
        const int native = std::string(code) == "ko" ? hangul_in(tr_captions[i]) : han_in(tr_captions[i]);
        EXPECT_GE(native, 2) << path << ", caption " << i + 1 << " is not translated: " << tr_captions[i];
      }
      // It switches the app's words to its language, and has a title in it.
      bool switches = false, titled = false;
      for (const ScriptCommand& c : translated->commands) {
        switches |= c.name == "language" && c.args == std::vector<std::string>{code};
        titled |= c.name == "title" && (hangul_in(c.args[0]) + han_in(c.args[0])) > 0;
      }
      EXPECT_TRUE(switches) << path;
      EXPECT_TRUE(titled) << path;
    }
  }
}

TEST(Lessons, ThePickerOffersEachLessonInTheLanguageChosenElseInEnglish) {
  const fs::path dir = testing::fresh_output_dir("lessons_picker");
  std::ofstream(dir / "a.lesson") << "title Alpha\npause\npause\n";
  std::ofstream(dir / "a.ko.lesson") << "title \xEC\x95\x8C\xED\x8C\x8C\nlanguage ko\npause\npause\n";
  std::ofstream(dir / "b.lesson") << "title Beta\npause\n";
  std::ofstream(dir / "c.zh.lesson") << "title only in Chinese\n";  // no English version: offered only in Chinese
  fs::create_directory(dir / "d.lesson");                                // a folder, not a lesson
  std::ofstream(dir / "notes.txt") << "not a lesson\n";
  const std::vector<LessonEntry> korean = find_lessons(dir.string(), Language::Korean);
  ASSERT_EQ(korean.size(), 2u);
  EXPECT_EQ(korean[0].name, "a");
  EXPECT_EQ(korean[0].path, (dir / "a.ko.lesson").string());
  EXPECT_TRUE(korean[0].in_language);
  EXPECT_EQ(korean[0].pauses, 2);
  EXPECT_EQ(korean[1].path, (dir / "b.lesson").string());
  EXPECT_FALSE(korean[1].in_language) << "English, and marked so";
  const std::vector<LessonEntry> chinese = find_lessons(dir.string(), Language::Chinese);
  ASSERT_EQ(chinese.size(), 3u);
  EXPECT_EQ(chinese[2].path, (dir / "c.zh.lesson").string());
  EXPECT_EQ(chinese[2].title, "only in Chinese");
  const std::vector<LessonEntry> english = find_lessons(dir.string(), Language::English);
  ASSERT_EQ(english.size(), 2u);
  EXPECT_EQ(english[0].path, (dir / "a.lesson").string());
  EXPECT_EQ(english[0].title, "Alpha");
  EXPECT_TRUE(find_lessons((dir / "missing").string(), Language::English).empty());
  // The shipped folder holds all six, in each language.
  for (const Language language : {Language::English, Language::Korean, Language::Chinese}) {
    const std::vector<LessonEntry> shipped = find_lessons(shipped_lessons_folder(), language);
    ASSERT_EQ(shipped.size(), 6u);
    for (const LessonEntry& l : shipped) EXPECT_TRUE(l.in_language) << l.path;
  }
}

// [SECTION] each language's screens, under xvfb-run

class LanguageScreens : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  void SetUp() override {
    if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
    if (!cjk_font_installed()) GTEST_SKIP() << "no CJK font (apt-get install fonts-wqy-microhei fonts-dejavu-core)";
  }
};

std::string screens_name(const ::testing::TestParamInfo<std::tuple<std::string, bool>>& info) {
  return std::get<0>(info.param) + (std::get<1>(info.param) ? "_presenting_1280x800" : "_1600x1000");
}

const char* const kScreenshotStages[] = {"tokens", "encoder-attention", "decoding", "training"};

// Every stage in this language: its words drawn from the fonts (no glyph as the replacement mark, no character
// without a font), each within its room (normally at 1600x1000; presenting at 1280x800, where the maps must also
// meet the room and their labels read); the four stages of the issue also as screenshots, whose words are in the
// language. (The maps' share of a presented stage is the projector tests' to check, with a lesson's caption.)
TEST_P(LanguageScreens, EveryStageDrawsEveryGlyphAndFits) {
  const auto& [code, present] = GetParam();
  const fs::path dir = testing::fresh_output_dir("languages_" + screens_name({GetParam(), 0}));
  std::string script = "language " + code + "\n" + (present ? "present on\n" : "") + "unhover\n";
  const std::vector<std::string> stages = [] {
    std::vector<std::string> out;
    std::string names = stage_names() + ",";
    for (size_t at = 0, comma; (comma = names.find(',', at)) != std::string::npos; at = comma + 2)
      out.push_back(names.substr(at, comma - at));
    return out;
  }();
  ASSERT_GT(stages.size(), 15u);
  for (const std::string& stage : stages) {
    script += "stage " + stage + "\nlayout " + stage + ".json\n";
    for (const char* shot : kScreenshotStages)
      if (stage == shot) script += "screenshot " + stage + ".png\n";
  }
  // The views beside the stages: Model info and the open-model dialog (their words, the vocabulary's samples).
  script += "show model-info\nlayout model-info.json\nshow open-model\nlayout open-model.json\nshow stage\n";
  fs::create_directories(dir / "no-data");
  ASSERT_EQ(testing::run_app_script(dir, script, "--data '" + (dir / "no-data").string() + "'",
                                    present ? "1280x800" : "1600x1000"),
            0)
      << testing::read_text(dir / "log.txt");
  std::string problems;
  for (const std::string& stage : stages) {
    const json layout = testing::load_json(dir / (stage + ".json"));
    ASSERT_TRUE(layout.contains("app")) << stage;
    EXPECT_EQ(layout["app"]["language"], code) << stage;
    problems += testing::glyph_problems(layout) + testing::fit_problems(layout);
    // The tokens stage keeps its path of nine pictures in every language (Korean's names, three lines at first,
    // once pushed the row out when presenting).
    if (stage == "tokens") {
      EXPECT_EQ(testing::items_named(layout, "thumbnail").size(), 9u) << code;
    }
    // The atlas fits the texture a software renderer takes (llvmpipe and most GPUs: 8192; WebGL's least: 4096).
    EXPECT_LE(layout["app"]["fonts"]["atlas_width"].get<int>(), 4096) << stage;
    EXPECT_LE(layout["app"]["fonts"]["atlas_height"].get<int>(), 4096) << stage;
  }
  for (const char* view : {"model-info", "open-model"}) {
    const json layout = testing::load_json(dir / (std::string(view) + ".json"));
    ASSERT_TRUE(layout.contains("app")) << view;
    problems += testing::glyph_problems(layout);
  }
  EXPECT_EQ(problems, "") << code << (present ? ", presenting at 1280x800" : " at 1600x1000");
  for (const char* shot : kScreenshotStages) {
    const testing::Image image = testing::load_png(dir / (std::string(shot) + ".png"));
    ASSERT_TRUE(image.pixels) << shot;
    EXPECT_EQ(image.width, present ? 1280 : 1600) << shot;
  }
}

INSTANTIATE_TEST_SUITE_P(Languages, LanguageScreens,
                         ::testing::Combine(::testing::Values("en", "ko", "zh"), ::testing::Bool()), screens_name);

// [SECTION] captions, the replacement mark and the fonts' fallbacks

// The pixels of the caption's first line (from its left edge, `width` wide: the same rectangle for every caption
// compared) from a layout dump and its screenshot.
struct CaptionPixels {
  std::vector<unsigned char> rgb;
  int fallback_glyphs = 0;
  json missing;
};

constexpr int kCaptionWidth = 160;

CaptionPixels caption_pixels(const fs::path& dir, const std::string& caption, const std::string& args = "",
                             const std::string& env = "") {
  const std::string script = "present on\nunhover\nstage tokens\ncaption " + caption + "\nlayout c.json\nscreenshot c.png\n";
  std::ofstream(dir / "script.txt") << script << "quit\n";
  const std::string cmd = "cd '" + dir.string() + "' && " + env + " " +
                          testing::headless_app_command("--no-settings --size 1280x800 " + args + " --script script.txt",
                                                        "1280x800") +
                          " > log.txt 2>&1";
  CaptionPixels out;
  if (std::system(cmd.c_str()) != 0) return out;
  const json layout = testing::load_json(dir / "c.json");
  const testing::Image image = testing::load_png(dir / "c.png");
  const std::vector<json> captions = testing::items_named(layout, "caption");
  if (captions.empty() || !image.pixels) return out;
  const json& c = captions[0];
  for (int y = static_cast<int>(testing::num(c, "y0")); y < static_cast<int>(testing::num(c, "y1")); ++y)
    for (int x = static_cast<int>(testing::num(c, "x0")); x < static_cast<int>(testing::num(c, "x0")) + kCaptionWidth; ++x)
      for (int k = 0; k < 3; ++k) out.rgb.push_back(image.at(x, y)[k]);
  out.fallback_glyphs = layout["app"]["fonts"]["fallback_glyphs_drawn"].get<int>();
  out.missing = layout["app"]["fonts"]["missing"];
  return out;
}

TEST(LanguageCaptions, AKoreanAndAChineseCaptionDrawTheirOwnGlyphsNotTheReplacementMark) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed";
  if (!cjk_font_installed()) GTEST_SKIP() << "no CJK font (apt-get install fonts-wqy-microhei)";
  // U+0378 is unassigned: no font has it, so each is drawn as the replacement mark. The same number of characters
  // in Korean and in Chinese must differ from those marks' pixels and draw none of them.
  const std::string marks = "\xCD\xB8\xCD\xB8\xCD\xB8\xCD\xB8\xCD\xB8\xCD\xB8";
  const std::string korean = "\xEC\x96\xB4\xED\x85\x90\xEC\x85\x98 \xEA\xB0\x80\xEC\xA4\x91";  // 어텐션 가중
  const std::string chinese = "\xE6\xB3\xA8\xE6\x84\x8F\xE5\x8A\x9B\xE6\x9D\x83\xE9\x87\x8D";      // 注意力权重 (5)
  const CaptionPixels m = caption_pixels(testing::fresh_output_dir("caption_marks"), marks);
  ASSERT_FALSE(m.rgb.empty()) << "the caption band was not found";
  EXPECT_GE(m.fallback_glyphs, 6) << "six unassigned characters, six marks";
  EXPECT_EQ(m.missing, json::array({0x378})) << "named once, whatever the number of them";
  const fs::path marks_log = fs::path(STEPFORMER_TEST_OUTPUT_DIR) / "caption_marks" / "log.txt";
  const std::string log = testing::read_text(marks_log);
  size_t named = 0;
  for (size_t at = 0; (at = log.find("U+0378", at)) != std::string::npos; ++at) ++named;
  EXPECT_EQ(named, 1u) << log;
  for (const auto& [name, text] : {std::pair<std::string, std::string>{"korean", korean}, {"chinese", chinese}}) {
    const CaptionPixels c = caption_pixels(testing::fresh_output_dir("caption_" + name), text);
    ASSERT_EQ(c.rgb.size(), m.rgb.size()) << name << ": the caption band changed size";
    EXPECT_EQ(c.fallback_glyphs, 0) << name;
    EXPECT_TRUE(c.missing.empty()) << name;
    size_t differ = 0;
    for (size_t i = 0; i < c.rgb.size(); ++i) differ += c.rgb[i] != m.rgb[i];
    EXPECT_GT(differ, c.rgb.size() / 200) << name << ": its pixels are the replacement marks'";
  }
}

TEST(LanguageFonts, HangulInAnEnglishWindowComesFromAFontFoundByScanning) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed";
  if (!cjk_font_installed()) GTEST_SKIP() << "no CJK font (apt-get install fonts-wqy-microhei)";
  // A font folder with DejaVu Sans and the CJK font under a name the app does not know: only the scan for a
  // character DejaVu lacks finds it.
  const fs::path dir = testing::fresh_output_dir("fonts_scan");
  fs::create_directories(dir / "fonts");
  fs::create_symlink(kLatinFont, dir / "fonts" / "DejaVuSans.ttf");
  fs::copy_file(kCjkFont, dir / "fonts" / "some-other-font.ttc");
  const CaptionPixels c =
      caption_pixels(dir, "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 caption", "--language en",
                     "STEPFORMER_FONT_DIRS='" + (dir / "fonts").string() + "'");
  ASSERT_FALSE(c.rgb.empty()) << testing::read_text(dir / "log.txt");
  EXPECT_EQ(c.fallback_glyphs, 0);
  EXPECT_TRUE(c.missing.empty());
  const json layout = testing::load_json(dir / "c.json");
  EXPECT_NE(layout["app"]["fonts"]["files"].dump().find("some-other-font.ttc"), std::string::npos) << layout["app"]["fonts"];
}

TEST(LanguageFonts, WithoutACjkFontTheAppSpeaksEnglishAndSaysWhyOnce) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed";
  if (!fs::exists(kLatinFont)) GTEST_SKIP() << "no DejaVu Sans (apt-get install fonts-dejavu-core)";
  const fs::path dir = testing::fresh_output_dir("fonts_no_cjk");
  fs::create_directories(dir / "fonts");
  fs::create_symlink(kLatinFont, dir / "fonts" / "DejaVuSans.ttf");
  std::ofstream(dir / "script.txt") << "stage tokens\nlayout a.json\nlanguage zh\nwait 2\nlayout b.json\nquit\n";
  const std::string cmd = "cd '" + dir.string() + "' && STEPFORMER_FONT_DIRS='" + (dir / "fonts").string() + "' " +
                          testing::headless_app_command("--no-settings --size 1280x800 --language ko --script script.txt",
                                                        "1280x800") +
                          " > log.txt 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::read_text(dir / "log.txt");
  for (const char* file : {"a.json", "b.json"}) {
    const json layout = testing::load_json(dir / file);
    EXPECT_EQ(layout["app"]["language"], "en") << file;
    EXPECT_EQ(testing::glyph_problems(layout), "") << file;
  }
  EXPECT_NE(testing::load_json(dir / "a.json")["app"]["dialog"].dump().find("fonts-wqy-microhei"), std::string::npos)
      << "asked for on the command line: the dialog says which package";
  const std::string log = testing::read_text(dir / "log.txt");
  size_t warnings = 0;
  for (size_t at = 0; (at = log.find("fonts-wqy-microhei", at)) != std::string::npos; ++at) ++warnings;
  EXPECT_EQ(warnings, 1u) << "one warning, not one per frame or per language asked: " << log;
}

// A file name in another script, in an English window: the model's name in the top bar and in the open dialog's
// recent files, a sentence with Marian's typographic quotes, and the Lessons popup's file tooltip, drawn from the
// fonts (the census notes them where they are drawn), none as the replacement mark.
TEST(LanguageFonts, AFileNameInAnotherScriptIsDrawnFromTheFontsThatHaveIt) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed";
  if (!cjk_font_installed()) GTEST_SKIP() << "no CJK font (apt-get install fonts-wqy-microhei)";
  const fs::path dir = testing::fresh_output_dir("fonts_file_name");
  const fs::path model = dir / "\xEB\xAA\xA8\xEB\x8D\xB8-\xE6\xA8\xA1\xE5\x9E\x8B.safetensors";  // 모델-模型
  fs::copy_file(std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors", model);
  // Then the shipped model, and the language switched there and back (the census starts over): the dialog's list of
  // recent files is the only place the Hangul name is left, and it must bring its glyphs back itself.
  const std::string script = "language en\nmodel " + model.string() +
                             "\nsentence \xE2\x80\x9E" "Ein Hund\xE2\x80\x9C rennt.\nstage tokens\nlayout a.json\n"
                             "model " + std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors\n"
                             "language zh\nwait 2\nlanguage en\nwait 2\nshow open-model\nwait 2\nlayout b.json\nshow stage\n";
  ASSERT_EQ(testing::run_app_script(dir, script), 0) << testing::read_text(dir / "log.txt");
  const json a = testing::load_json(dir / "a.json"), b = testing::load_json(dir / "b.json");
  EXPECT_EQ(testing::glyph_problems(a), "");
  EXPECT_EQ(testing::glyph_problems(b), "");
  EXPECT_NE(a["app"]["model_path"].get<std::string>().find("\xEB\xAA\xA8\xEB\x8D\xB8"), std::string::npos);
}

// Hostile font folders: a font cut short, a FIFO and a device named like fonts, a folder that links to itself. None is
// read as a font (a FIFO would block the app; a cut font would have stb_truetype read past its end); the app draws
// what DejaVu Sans has, names the Hangul it cannot draw, and exits cleanly.
TEST(LanguageFonts, BrokenFontsAFifoAndALinkLoopInTheFontFoldersAreSkipped) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed";
  if (!cjk_font_installed()) GTEST_SKIP() << "no CJK font (apt-get install fonts-wqy-microhei)";
  const fs::path dir = testing::fresh_output_dir("fonts_hostile");
  const fs::path fonts = dir / "fonts";
  fs::create_directories(fonts);
  fs::create_symlink(kLatinFont, fonts / "DejaVuSans.ttf");
  {
    std::ifstream in(kCjkFont, std::ios::binary);
    std::string head(4096, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(fonts / "cut-short.ttc", std::ios::binary) << head;  // its tables point past its end
  }
  ASSERT_EQ(::mkfifo((fonts / "fifo.ttf").c_str(), 0644), 0);
  fs::create_symlink("/dev/zero", fonts / "zero.otf");
  fs::create_directory_symlink(fonts, fonts / "loop");
  const CaptionPixels c = caption_pixels(dir, "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 caption", "--language en",
                                         "STEPFORMER_FONT_DIRS='" + fonts.string() + "'");
  ASSERT_FALSE(c.rgb.empty()) << testing::read_text(dir / "log.txt");
  EXPECT_EQ(c.missing, json::array({0xAD6D, 0xC5B4, 0xD55C})) << "the Hangul no usable font has, named";
  const json layout = testing::load_json(dir / "c.json");
  EXPECT_EQ(layout["app"]["fonts"]["files"], json::array({(fonts / "DejaVuSans.ttf").string()}));
}

// Switched live, by the script's `language` (as the View popup does): each screen in the language just chosen,
// every glyph drawn, no restart.
TEST(LanguageSwitch, LiveEachScreenSpeaksTheLanguageJustChosen) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed";
  if (!cjk_font_installed()) GTEST_SKIP() << "no CJK font (apt-get install fonts-wqy-microhei)";
  const fs::path dir = testing::fresh_output_dir("language_switch");
  const std::string script =
      "language en\nstage encoder-attention\nlayout en.json\nlanguage zh\nlayout zh.json\nlanguage ko\n"
      "layout ko.json\nstage decoding\nlayout ko2.json\nlanguage en\nlayout en2.json\n";
  ASSERT_EQ(testing::run_app_script(dir, script), 0) << testing::read_text(dir / "log.txt");
  for (const char* code : {"en", "zh", "ko", "ko2", "en2"}) {
    const json layout = testing::load_json(dir / (std::string(code) + ".json"));
    EXPECT_EQ(layout["app"]["language"], std::string(code).substr(0, 2)) << code;
    EXPECT_EQ(testing::glyph_problems(layout), "") << code;
    EXPECT_EQ(testing::fit_problems(layout), "") << code;
  }
}

// The language chosen is remembered: a run with --language ko writes it to the settings, and the next run without
// --language speaks Korean; --language on the command line wins over it.
TEST(LanguageSwitch, TheSettingsRememberTheLanguageChosen) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed";
  if (!cjk_font_installed()) GTEST_SKIP() << "no CJK font (apt-get install fonts-wqy-microhei)";
  const fs::path dir = testing::fresh_output_dir("language_settings");
  const auto run = [&](const std::string& args, const std::string& layout) {
    const std::string cmd = "cd '" + dir.string() + "' && XDG_CONFIG_HOME='" + (dir / "config").string() +
                            "' LC_ALL=C LANG=C " + testing::headless_app_command(args + " --layout-json " + layout + " --screenshot s.png") +
                            " > log.txt 2>&1";
    return std::system(cmd.c_str());
  };
  ASSERT_EQ(run("--language ko", "a.json"), 0) << testing::read_text(dir / "log.txt");
  EXPECT_EQ(testing::load_json(dir / "a.json")["app"]["language"], "ko");
  const json settings = testing::load_json(dir / "config" / "stepformer" / "settings.json");
  EXPECT_EQ(settings.value("language", ""), "ko") << settings.dump();
  ASSERT_EQ(run("", "b.json"), 0) << testing::read_text(dir / "log.txt");
  EXPECT_EQ(testing::load_json(dir / "b.json")["app"]["language"], "ko") << "the last session's";
  ASSERT_EQ(run("--language zh", "c.json"), 0);
  EXPECT_EQ(testing::load_json(dir / "c.json")["app"]["language"], "zh") << "the command line's";
}

// The font atlas at the largest type: UI scale 3 presenting on a 4K screen (86 px), and UI scale 4 (72 px), in
// each language, fits a 4096 x 4096 texture (what WebGL and the smallest GPUs take; llvmpipe takes 16384).
TEST(LanguageFonts, TheAtlasAtTheLargestTypeFitsA4096Texture) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed";
  if (!cjk_font_installed()) GTEST_SKIP() << "no CJK font (apt-get install fonts-wqy-microhei)";
  const fs::path dir = testing::fresh_output_dir("language_atlas");
  for (const char* code : kCodes)
    for (const std::string& args : {std::string("--ui-scale 3 --present"), std::string("--ui-scale 4")}) {
      const std::string cmd = "cd '" + dir.string() + "' && " +
                              testing::headless_app_command("--no-settings --size 3840x2160 --language " +
                                                                std::string(code) + " " + args +
                                                                " --layout-json a.json --screenshot a.png",
                                                            "3840x2160") +
                              " > log.txt 2>&1";
      ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::read_text(dir / "log.txt");
      const json layout = testing::load_json(dir / "a.json");
      const json& fonts = layout["app"]["fonts"];
      EXPECT_LE(fonts["atlas_width"].get<int>(), 4096) << code << " " << args;
      EXPECT_LE(fonts["atlas_height"].get<int>(), 4096) << code << " " << args;
      EXPECT_GE(layout["panels"]["font_size"].get<float>(), 72.0f) << code << " " << args;
      EXPECT_EQ(testing::glyph_problems(layout), "") << code << " " << args;
    }
}

// The Lessons button as a teacher uses it: in Chinese, the popup's first lesson is its Chinese version, and
// picking it starts it at its first pause (the window's title says so, in Chinese) with no restart. The app under
// xvfb-run -a, the clicks from xdotool, where the layout dump put the button.
TEST(LessonsButton, PickingALessonStartsItsVersionInTheLanguageChosen) {
  if (std::string(STEPFORMER_XVFB_RUN).empty()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb)";
  if (std::system("command -v xdotool > /dev/null 2>&1") != 0) GTEST_SKIP() << "xdotool is not installed";
  if (!cjk_font_installed()) GTEST_SKIP() << "no CJK font (apt-get install fonts-wqy-microhei)";
  const fs::path dir = testing::fresh_output_dir("lessons_button");
  ASSERT_EQ(testing::run_app_script(dir, "layout l.json\n", "--language zh", "1280x800"), 0)
      << testing::read_text(dir / "log.txt");
  const std::vector<json> button = testing::items_named(testing::load_json(dir / "l.json"), "lessons.button");
  ASSERT_EQ(button.size(), 1u);
  const int x = static_cast<int>((testing::num(button[0], "x0") + testing::num(button[0], "x1")) / 2);
  const int y = static_cast<int>((testing::num(button[0], "y0") + testing::num(button[0], "y1")) / 2);
  // The popup opens at the pointer: its heading, a separator, then the lessons, one line (18 px type) each.
  std::ofstream(dir / "drive.sh") << "#!/bin/sh\n"
      << STEPFORMER_APP_PATH << " --no-settings --language zh --size 1280x800 > " << (dir / "app.txt").string()
      << " 2>&1 &\n"
      << "app=$!\n"
      << "timeout 60 xdotool search --sync --name '^Stepformer$' > /dev/null || { kill $app; exit 0; }\n"
      // (up to five tries: on a loaded machine a click can land before the frame that draws the popup)
      << "for try in 1 2 3 4 5; do\n"
      << "  sleep 1\n"
      << "  xdotool mousemove " << x << " " << y << " click 1\n"
      << "  sleep 1\n"
      << "  xdotool mousemove " << x + 40 << " " << y + 46 << " click 1\n"
      << "  if timeout 10 xdotool search --sync --name '^Stepformer.*1/[0-9]+' > " << (dir / "title.txt").string()
      << "; then xdotool getwindowname $(head -1 " << (dir / "title.txt").string() << ") > "
      << (dir / "name.txt").string() << "; break; fi\n"
      << "done\n"
      << "kill $app\n";
  const std::string cmd =
      std::string(STEPFORMER_XVFB_RUN) + " -a -s '-screen 0 1280x800x24' sh " + (dir / "drive.sh").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string name = testing::read_text(dir / "name.txt");
  // Stepformer：课程，第 1/N 个暂停点 (the first lesson of the list in Chinese: its pauses, the title in Chinese)
  EXPECT_NE(name.find("\xE8\xAF\xBE\xE7\xA8\x8B"), std::string::npos)
      << "no lesson started: '" << name << "' (see " << dir / "app.txt" << ")";
  const std::vector<LessonEntry> listed = find_lessons(shipped_lessons_folder(), Language::Chinese);
  ASSERT_FALSE(listed.empty());
  ASSERT_NE(listed[0].path.find(".zh.lesson"), std::string::npos) << listed[0].path;
  std::string error;
  const auto first = parse_script_file(listed[0].path, error, ScriptParse::Lesson);
  ASSERT_TRUE(first);
  int pauses = 0;
  for (const ScriptCommand& c : first->commands) pauses += c.name == "pause";
  EXPECT_NE(name.find("1/" + std::to_string(pauses)), std::string::npos) << name;
}

}  // namespace
}  // namespace sf::gui
