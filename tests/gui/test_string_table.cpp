// Every word on screen comes from the string table (app/gui/text/en.inc, gui/text/text.h): these tests read the
// app's sources and the table.
//
// The scanner (find_screen_literals) and its rules, kept simple on purpose:
//   1. Comments are dropped; string and character literals are read with their escapes.
//   2. A call is an identifier from kTextCalls, as a whole word, followed by "(": the ImGui calls that draw a
//      text or a label, ImDrawList::AddText, and the app's own wrappers that take a text (widgets.h, math_text.h,
//      ...). Its arguments are split at top-level commas; the table says which arguments are text (all of them,
//      or the first ones only: math_text's item name, for one, is an id the tests read, not text).
//   3. Each string literal inside a text argument, nested calls included, is cut at "##" (an ImGui id follows)
//      and stripped of its math spans ("$...$": notation, the same in every language), printf conversions
//      ("%d", "%.3f", "%-8s") and escapes ("\n", "\u00d7"). What is left is a violation when it holds two
//      letters in a row ([A-Za-z]{2,}): a word. Single letters ("x", "Q"), numbers and punctuation pass.
//   4. Literals inside tr(...) and tr_label(...) are placeholder names and ImGui ids, not read.
//   5. A text that goes through a variable first is not seen: that is what the review is for; the calls are
//      where nearly all of them were.
// The placeholder check (PlaceholdersMatchEveryCall) reads each tr(T::id, {{"name", value}, ...}) and
// tr_label(...) call in app/gui and compares the names with the entry's placeholders; tr(T::id) with no values
// must name an entry that has none.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gui/app.h"
#include "gui/stages.h"
#include "gui/text/text.h"
#include "headless_imgui.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;

const fs::path kGuiDir = fs::path(STEPFORMER_SOURCE_DIR) / "app" / "gui";

// Files whose screen text is not yet in the table. Empty when the conversion is done; a file listed here that
// has no violation left fails the test, so the list only shrinks.
const std::set<std::string> kNotYetConverted = {
};

// [SECTION] the scanner

// A call whose arguments hold text: the name, and how many leading arguments are text (-1: all).
struct TextCall {
  const char* name;
  int text_arguments;
};
constexpr TextCall kTextCalls[] = {
    // ImGui 1.86: texts, labels, titles, tooltips, column headers
    {"Text", -1}, {"TextUnformatted", -1}, {"TextWrapped", -1}, {"TextColored", -1}, {"TextDisabled", -1},
    {"BulletText", -1}, {"LabelText", -1}, {"Button", 1}, {"SmallButton", 1}, {"Checkbox", 1}, {"RadioButton", 1},
    {"Selectable", 1}, {"MenuItem", 2}, {"BeginMenu", 1}, {"BeginTabItem", 1}, {"CollapsingHeader", 1},
    {"TreeNode", -1}, {"TreeNodeEx", -1}, {"SetTooltip", -1}, {"Begin", 1}, {"BeginPopupModal", 1},
    {"SliderInt", 1}, {"SliderFloat", 1}, {"DragInt", 1}, {"DragFloat", 1}, {"InputText", 1},
    {"InputTextWithHint", 2}, {"InputInt", 1}, {"InputFloat", 1}, {"Combo", -1}, {"BeginCombo", 2},
    {"TableSetupColumn", 1}, {"ProgressBar", -1}, {"PlotLines", -1}, {"PlotHistogram", -1}, {"AddText", -1},
    {"CalcTextSize", 1},
    // the app's wrappers (gui/widgets.h, gui/render/math_text.h, gui/render/heatmap.h)
    {"explanation", 1}, {"explanation_height", 1}, {"formula", 1}, {"math_text", 1}, {"math_text_size", 1},
    {"text_disabled_wrapped", -1}, {"numbered_slider", 1}, {"labelled_box_width", 1}, {"button_width", 1},
    {"labelled_field_width", 2}, {"rotated_text", 4}, {"heading", 1}, {"colour_bar", 1},
};

struct Violation {
  int line;
  std::string literal;
};

// The source with comments blanked (line breaks kept, so offsets still give line numbers).
std::string without_comments(const std::string& s) {
  std::string out = s;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"' || s[i] == '\'') {  // skip a literal
      const char quote = s[i];
      for (++i; i < s.size() && s[i] != quote; ++i)
        if (s[i] == '\\') ++i;
    } else if (s.compare(i, 2, "//") == 0) {
      for (; i < s.size() && s[i] != '\n'; ++i) out[i] = ' ';
    } else if (s.compare(i, 2, "/*") == 0) {
      const size_t end = s.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? s.size() : end + 2;
      for (; i < stop; ++i)
        if (s[i] != '\n') out[i] = ' ';
      --i;
    }
  }
  return out;
}

// What the literal's text holds that is not an id, math, a printf conversion or an escape: "" when nothing.
std::string words_of_literal(std::string body) {
  static const std::regex escapes(R"(\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.))");
  static const std::regex conversions(R"(%[-+ #0]*(\d+|\*)?(\.(\d+|\*))?(hh|h|ll|l|z|j|t|L)?[diouxXfFeEgGaAcsp%])");
  const size_t id = body.find("##");
  if (id != std::string::npos) body.resize(id);
  body = std::regex_replace(body, std::regex(R"(\\\$)"), " ");  // an escaped dollar is not math
  std::string plain;
  bool math = false;
  for (const char c : body) {
    if (c == '$') math = !math;
    else if (!math) plain += c;
  }
  plain = std::regex_replace(plain, escapes, " ");
  plain = std::regex_replace(plain, conversions, " ");
  static const std::regex word("[A-Za-z]{2,}");
  std::smatch m;
  return std::regex_search(plain, m, word) ? plain : "";
}

// Every string literal in [begin, end) of `s`: its offset and its body (escapes as written).
std::vector<std::pair<size_t, std::string>> literals_in(const std::string& s, size_t begin, size_t end) {
  std::vector<std::pair<size_t, std::string>> out;
  for (size_t i = begin; i < end; ++i) {
    if (s[i] == '\'') {
      for (++i; i < end && s[i] != '\''; ++i)
        if (s[i] == '\\') ++i;
    } else if (s[i] == '"') {
      const size_t start = i;
      std::string body;
      for (++i; i < end && s[i] != '"'; ++i) {
        if (s[i] == '\\') body += s[i++];
        body += s[i];
      }
      out.emplace_back(start, body);
    }
  }
  return out;
}

// The end of the bracketed group opening at `open` (s[open] is '(' or '{'): the offset of its closing bracket.
size_t group_end(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"' || c == '\'') {
      for (++i; i < s.size() && s[i] != c; ++i)
        if (s[i] == '\\') ++i;
    } else if (c == '(' || c == '{' || c == '[') {
      ++depth;
    } else if (c == ')' || c == '}' || c == ']') {
      if (--depth == 0) return i;
    }
  }
  return s.size();
}

// The top-level arguments of the call whose '(' is at `open`: [begin, end) offsets.
std::vector<std::pair<size_t, size_t>> arguments(const std::string& s, size_t open) {
  std::vector<std::pair<size_t, size_t>> out;
  const size_t close = group_end(s, open);
  size_t start = open + 1;
  int depth = 0;
  for (size_t i = open + 1; i < close; ++i) {
    const char c = s[i];
    if (c == '"' || c == '\'') {
      for (++i; i < close && s[i] != c; ++i)
        if (s[i] == '\\') ++i;
    } else if (c == '(' || c == '{' || c == '[') {
      ++depth;
    } else if (c == ')' || c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.emplace_back(start, i);
      start = i + 1;
    }
  }
  out.emplace_back(start, close);
  return out;
}

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

int line_of(const std::string& s, size_t offset) {
  return 1 + static_cast<int>(std::count(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

std::vector<Violation> find_screen_literals(const std::string& source) {
  const std::string s = without_comments(source);
  std::vector<Violation> out;
  std::set<size_t> seen;  // a literal inside two calls (a wrapper's argument) is told once
  static const std::regex table_call(R"(\btr(_label)?\s*\()");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), table_call); it != std::sregex_iterator(); ++it) {
    const size_t open = static_cast<size_t>(it->position(0) + it->length(0) - 1);
    for (const auto& lit : literals_in(s, open, group_end(s, open))) seen.insert(lit.first);  // rule 4
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"' || s[i] == '\'') {  // not inside literals
      const char quote = s[i];
      for (++i; i < s.size() && s[i] != quote; ++i)
        if (s[i] == '\\') ++i;
      continue;
    }
    if (!identifier_char(s[i]) || (i > 0 && identifier_char(s[i - 1]))) continue;
    size_t e = i;
    while (e < s.size() && identifier_char(s[e])) ++e;
    const std::string name = s.substr(i, e - i);
    size_t open = e;
    while (open < s.size() && (s[open] == ' ' || s[open] == '\n')) ++open;
    const TextCall* call = nullptr;
    for (const TextCall& c : kTextCalls)
      if (name == c.name) call = &c;
    if (!call || open >= s.size() || s[open] != '(') {
      i = e - 1;
      continue;
    }
    const auto args = arguments(s, open);
    for (size_t a = 0; a < args.size(); ++a) {
      if (call->text_arguments >= 0 && static_cast<int>(a) >= call->text_arguments) break;
      for (const auto& [offset, body] : literals_in(s, args[a].first, args[a].second))
        if (!words_of_literal(body).empty() && seen.insert(offset).second)
          out.push_back({line_of(s, offset), body});
    }
    i = e - 1;
  }
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every .cpp and .h under app/gui but the table itself, as paths relative to app/gui.
std::vector<std::string> gui_sources() {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(kGuiDir)) {
    if (!entry.is_regular_file()) continue;
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".h") continue;
    out.push_back(fs::relative(entry.path(), kGuiDir).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// [SECTION] the scanner's own checks

TEST(StringTableScanner, FindsAPlantedLiteral) {
  const std::string planted = R"src(
void draw() {
  ImGui::Text("Layer %d", layer);                  // line 3: a word
  ImGui::Button("Run##go");                        // line 4: the part before ## shows
  ImGui::TextColored(colour, "%s", on ? "on" : "off");  // line 5: nested literals in a text argument
  draw->AddText(pos, colour, "head");              // line 6
  explanation("Each row is a query.");            // line 7: a wrapper
  ImGui::SetTooltip(
      "two lines, "
      "one call");                                 // lines 9, 10
}
)src";
  const std::vector<Violation> found = find_screen_literals(planted);
  std::vector<int> lines;
  for (const Violation& v : found) lines.push_back(v.line);
  EXPECT_EQ(lines, (std::vector<int>{3, 4, 5, 5, 6, 7, 9, 10}));
}

TEST(StringTableScanner, LetsIdsNotationAndTableTextsPass) {
  const std::string clean = R"src(
void draw() {
  ImGui::Text("%d / %.3f (%s) %-8s %%", a, b, c, d);    // conversions and punctuation
  ImGui::Button(tr_label(T::run_button, "go").c_str());  // from the table
  ImGui::Checkbox("##hidden", &on);                      // an id only
  ImGui::TextUnformatted("x");                           // one symbol
  ImGui::TextUnformatted("\u00d7 \u2212\n");             // escapes
  formula("$softmax(Q K^T / \\sqrt{d_k}) V$");           // math is notation
  math_text(tr(T::attention_title), 0, 0, "formula");    // the item name is an id, not text
  // ImGui::Text("a comment is not drawn");
  ImGui::BeginChild("scroll_area");                      // not a text call: the id never shows
  ImGui::TextUnformatted(tr(T::attention_title));
  const char* s = "Layer";                               // not in a call: the review's job
}
)src";
  for (const Violation& v : find_screen_literals(clean)) ADD_FAILURE() << "line " << v.line << ": \"" << v.literal << "\"";
}

// [SECTION] the app's sources

TEST(StringTable, NoScreenTextOutsideTheTable) {
  std::set<std::string> listed_but_clean = kNotYetConverted;
  for (const std::string& file : gui_sources()) {
    if (file.rfind("text/", 0) == 0) continue;
    const std::vector<Violation> found = find_screen_literals(read_file(kGuiDir / file));
    if (!found.empty()) listed_but_clean.erase(file);
    if (kNotYetConverted.count(file)) continue;
    for (const Violation& v : found)
      ADD_FAILURE() << "app/gui/" << file << ":" << v.line << ": \"" << v.literal
                    << "\" reaches the screen without the string table (app/gui/text/en.inc)";
  }
  for (const std::string& file : listed_but_clean)
    ADD_FAILURE() << "app/gui/" << file << " has no screen text left outside the table: take it off kNotYetConverted";
}

// [SECTION] the table

TEST(StringTable, EveryEntryIsWellFormed) {
  std::set<std::string_view> ids;
  for (size_t i = 0; i < kTextCount; ++i) {
    const T id = static_cast<T>(i);
    EXPECT_TRUE(ids.insert(text_id_name(id)).second) << "id " << text_id_name(id) << " twice";
    EXPECT_FALSE(english_text(id).empty()) << text_id_name(id) << " is empty";
    EXPECT_EQ(text_format_problem(english_text(id)), "") << text_id_name(id) << ": \"" << english_text(id) << "\"";
    static const std::regex id_rule("[a-z][a-z0-9]*(_[a-z0-9]+)*");
    EXPECT_TRUE(std::regex_match(std::string(text_id_name(id)), id_rule)) << text_id_name(id) << ": ids are snake_case";
  }
}

// The math spans of a text, "$...$" each with its dollars, in order (\$ is a dollar sign, not math).
std::vector<std::string> math_spans(std::string_view text) {
  std::vector<std::string> out;
  size_t start = std::string_view::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '$') {
      ++i;
      continue;
    }
    if (text[i] != '$') continue;
    if (start == std::string_view::npos) {
      start = i;
    } else {
      out.emplace_back(text.substr(start, i + 1 - start));
      start = std::string_view::npos;
    }
  }
  return out;
}

// Every language's table (ko.inc, zh.inc beside en.inc; the build checks their ids and order) has a text for every
// entry, well formed, with exactly the English placeholders and the English math: a translation that drops a
// {layer}, invents a {name} or rewrites a formula fails here, naming the entry.
TEST(StringTable, EveryLanguageHasEveryEntryWithTheEnglishPlaceholdersAndMath) {
  for (size_t l = 1; l < static_cast<size_t>(Language::count_); ++l) {
    const Language language = static_cast<Language>(l);
    const char* code = language_code(language);
    int translated = 0;
    for (size_t i = 0; i < kTextCount; ++i) {
      const T id = static_cast<T>(i);
      const std::string_view text = table_text(language, id);
      EXPECT_FALSE(text.empty()) << code << ": " << text_id_name(id) << " is empty";
      EXPECT_EQ(text_format_problem(text), "") << code << ": " << text_id_name(id) << ": \"" << text << "\"";
      std::vector<std::string_view> names = text_placeholders(text), english = text_placeholders(english_text(id));
      std::sort(names.begin(), names.end());
      std::sort(english.begin(), english.end());
      EXPECT_EQ(names, english) << code << ": " << text_id_name(id) << ": \"" << text << "\"";
      std::vector<std::string> math = math_spans(text), english_math = math_spans(english_text(id));
      std::sort(math.begin(), math.end());
      std::sort(english_math.begin(), english_math.end());
      EXPECT_EQ(math, english_math) << code << ": " << text_id_name(id) << ": the formula differs";
      translated += text != english_text(id);
    }
    // (a table that is the English one copied is not a translation: most entries must differ)
    EXPECT_GT(translated, static_cast<int>(kTextCount) * 9 / 10) << code;
  }
}

TEST(StringTable, TheLanguageChosenIsTheOneTrSpeaks) {
  Language language = Language::English;
  ASSERT_TRUE(language_from_code("ko", &language));
  EXPECT_EQ(language, Language::Korean);
  ASSERT_TRUE(language_from_code("zh", &language));
  EXPECT_EQ(language, Language::Chinese);
  EXPECT_FALSE(language_from_code("fr", &language));
  const int errors = text_argument_errors();
  set_language(Language::Korean);
  EXPECT_STREQ(tr(T::stage_title_cross_attention), std::string(table_text(Language::Korean, T::stage_title_cross_attention)).c_str());
  const std::string korean = tr(T::app_detail_layer_head, {{"layer", 2}, {"head", 5}});
  set_language(Language::Chinese);
  const std::string chinese = tr(T::app_detail_layer_head, {{"layer", 2}, {"head", 5}});
  set_language(Language::English);
  EXPECT_EQ(tr(T::app_detail_layer_head, {{"layer", 2}, {"head", 5}}), "layer 2, head 5");
  for (const std::string& text : {korean, chinese}) {
    EXPECT_NE(text, "layer 2, head 5");
    EXPECT_NE(text.find('2'), std::string::npos) << text;
    EXPECT_NE(text.find('5'), std::string::npos) << text;
    EXPECT_EQ(text.find('{'), std::string::npos) << text;
  }
  EXPECT_EQ(text_argument_errors(), errors);
}

TEST(StringTable, FormatRulesCatchBadTexts) {
  EXPECT_EQ(text_format_problem("layer {layer}, head {head}"), "");
  EXPECT_EQ(text_format_problem("scale by $\\sqrt{d_{model}}$ at {layer}"), "");  // math braces are the math's
  EXPECT_EQ(text_format_problem("costs \\$5 {n}"), "");
  EXPECT_NE(text_format_problem("layer {layer"), "");
  EXPECT_NE(text_format_problem("layer layer}"), "");
  EXPECT_NE(text_format_problem("layer {Layer}"), "");
  EXPECT_NE(text_format_problem("layer {}"), "");
  EXPECT_NE(text_format_problem("layer {2d}"), "");
  EXPECT_NE(text_format_problem("a formula $x_{i}"), "");
  const std::vector<std::string_view> names = text_placeholders("{layer}, {head} of {layer} $W_{i}^Q$");
  EXPECT_EQ(names, (std::vector<std::string_view>{"layer", "head"}));
}

TEST(StringTable, FillsNamedPlaceholdersAndReportsMisuse) {
  const TextArg both[] = {{"layer", 2}, {"head", std::string("5")}};
  EXPECT_EQ(fill_text("layer {layer}, head {head}", both), "layer 2, head 5");
  EXPECT_EQ(fill_text("head {head} of layer {layer}", both), "head 5 of layer 2");  // another word order
  int missing = 0, unused = 0;
  const TextArg one[] = {{"layer", 2}, {"colour", "red"}};
  EXPECT_EQ(fill_text("layer {layer}, head {head}", one, &missing, &unused), "layer 2, head {head}");
  EXPECT_EQ(missing, 1);
  EXPECT_EQ(unused, 1);
  // Through tr(): a text with placeholders given the wrong names shows them and counts an error.
  for (size_t i = 0; i < kTextCount; ++i) {
    const T id = static_cast<T>(i);
    if (placeholders(id).empty()) continue;
    reset_text_argument_errors();
    const std::string shown = tr(id, {{"no_such_placeholder", "x"}});
    EXPECT_EQ(text_argument_errors(), 1);
    EXPECT_NE(shown.find("{" + std::string(placeholders(id)[0]) + "}"), std::string::npos) << shown;
    EXPECT_FALSE(text_arguments_match(id, {"no_such_placeholder"}));
    EXPECT_TRUE(text_arguments_match(id, placeholders(id)));
    reset_text_argument_errors();
    break;
  }
}

// Every tr(T::id, {{"name", ...}, ...}) call in app/gui gives exactly the entry's placeholders; every tr(T::id)
// and tr_label(T::id, "id") names an entry without any.
TEST(StringTable, PlaceholdersMatchEveryCall) {
  std::map<std::string, T, std::less<>> by_name;
  for (size_t i = 0; i < kTextCount; ++i) by_name.emplace(std::string(text_id_name(static_cast<T>(i))), static_cast<T>(i));
  int calls = 0;
  static const std::regex call(R"(\btr(_label)?\s*\(\s*T::([a-z0-9_]+)\s*([,)]))");
  for (const std::string& file : gui_sources()) {
    const std::string s = without_comments(read_file(kGuiDir / file));
    for (auto it = std::sregex_iterator(s.begin(), s.end(), call); it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      const std::string where = "app/gui/" + file + ":" + std::to_string(line_of(s, m.position(0)));
      const auto entry = by_name.find(m[2].str());
      if (entry == by_name.end()) continue;  // not a table id: the compiler says so
      ++calls;
      std::vector<std::string> names;
      bool listed = true;  // the values are a braced list here (else a span built elsewhere: checked at run time)
      if (m[3] == ",") {
        size_t k = static_cast<size_t>(m.position(0) + m.length(0));
        while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
        if (s[k] == '{') {
          const size_t close = group_end(s, k);
          // each value: {"name", value} one level in
          for (size_t j = k + 1; j < close; ++j) {
            if (s[j] != '{') continue;
            const size_t inner = group_end(s, j);
            const auto lits = literals_in(s, j, inner);
            if (!lits.empty()) names.push_back(lits.front().second);
            j = inner;
          }
        } else if (s[k] != '"' || m[1] != "_label") {
          listed = false;
        }
      }
      if (!listed) continue;
      std::vector<std::string_view> views(names.begin(), names.end());
      std::vector<std::string> wanted(placeholders(entry->second).begin(), placeholders(entry->second).end());
      std::ostringstream want, given;
      for (const auto& w : wanted) want << "{" << w << "} ";
      for (const auto& n : names) given << "\"" << n << "\" ";
      EXPECT_TRUE(text_arguments_match(entry->second, views))
          << where << ": " << m[2] << " has placeholders " << (wanted.empty() ? "none " : want.str())
          << "but the call gives " << (names.empty() ? "none" : given.str());
    }
  }
  EXPECT_GT(calls, 0) << "no tr() call found: has the scanner lost its way?";
}

// Every stage drawn headless, in the normal view and in presentation mode, on a model and a sentence: no tr()
// call the frames make gets values that do not fit its entry (the calls the source check cannot read: an entry
// chosen at run time, values given as a list built beforehand).
TEST(StringTable, EveryStageFillsItsTextsExactly) {
  testing::start_headless_imgui();
  AppOptions options;
  options.model_path = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/models/pytorch_tutorial_tiny.safetensors";
  options.sentence = "Ein Mann mit einer Frau.";
  {
    App app(options);
    app.finish_loading();
    testing::headless_frame(app);
    app.mutable_state().finish_background();  // the translation, so that every stage has something to draw
    testing::headless_frame(app);
    ASSERT_TRUE(app.state().ready()) << app.state().error();
    reset_text_argument_errors();
    for (const bool present : {false, true}) {
      app.view().present = present;
      for (int s = 0; s < static_cast<int>(Stage::Count); ++s) {
        ASSERT_TRUE(app.go_to(stage_name(static_cast<Stage>(s))));
        for (int f = 0; f < 3; ++f) testing::headless_frame(app);
      }
    }
    EXPECT_EQ(text_argument_errors(), 0) << "a tr() call's values did not fit its entry: its name is on stderr ([tr])";
  }
  ImGui::DestroyContext();
}

}  // namespace
}  // namespace sf::gui
