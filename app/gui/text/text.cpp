#include "gui/text/text.h"

#include "gui/text/glyphs.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace sf::gui {

namespace {

// [SECTION] the tables: one per language, the same ids in the same order
// One entry of a table: its id as written (every table has the same ids in the same order) and its text.
struct Entry {
  std::string_view id;
  const char* text;
};
using Table = std::array<Entry, kTextCount>;
#define X(id, text) Entry{#id, text},
constexpr Table kEnglish = {{
#include "gui/text/en.inc"
}};
constexpr Table kKorean = {{
#include "gui/text/ko.inc"
}};
constexpr Table kChinese = {{
#include "gui/text/zh.inc"
}};
#undef X
// Every table has every id of the English one, in its order: an entry missing, extra or out of place stops the
// build here (an extra one already does: too many initializers).
constexpr bool same_ids(const Table& table) {
  for (size_t i = 0; i < kTextCount; ++i)
    if (table[i].id != kEnglish[i].id) return false;
  return true;
}
static_assert(same_ids(kKorean), "ko.inc's ids differ from en.inc's (missing, renamed or out of order)");
static_assert(same_ids(kChinese), "zh.inc's ids differ from en.inc's (missing, renamed or out of order)");

constexpr std::array<const Table*, static_cast<size_t>(Language::count_)> kTables = {&kEnglish, &kKorean, &kChinese};

std::atomic<Language> g_language{Language::English};
std::atomic<int> g_argument_errors{0};

bool name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c == '_' && !first) || (c >= '0' && c <= '9' && !first);
}

// Walks `text` as the header's rules read it: calls on_text(piece) for plain and math text, on_placeholder(name)
// for each "{name}"; returns the first problem found ("" when none).
template <class OnText, class OnPlaceholder>
std::string walk(std::string_view text, OnText on_text, OnPlaceholder on_placeholder) {
  bool math = false;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '$') {
      ++i;  // an escaped dollar, in math or out
      continue;
    }
    if (c == '$') {
      math = !math;
      continue;
    }
    if (math) continue;
    if (c == '}') return "a '}' with no '{' at byte " + std::to_string(i);
    if (c != '{') continue;
    const size_t close = text.find('}', i);
    if (close == std::string_view::npos) return "a '{' with no '}' at byte " + std::to_string(i);
    const std::string_view name = text.substr(i + 1, close - i - 1);
    if (name.empty()) return "an empty placeholder '{}' at byte " + std::to_string(i);
    for (size_t k = 0; k < name.size(); ++k)
      if (!name_char(name[k], k == 0))
        return "placeholder '{" + std::string(name) + "}': a name is lowercase letters, digits and '_', from a letter";
    on_text(text.substr(start, i - start));
    on_placeholder(name);
    start = close + 1;
    i = close;
  }
  if (math) return "a '$' math span that does not close";
  on_text(text.substr(start));
  return "";
}

// Each entry's placeholders, from the English table (every language has the same ones).
const std::vector<std::vector<std::string_view>>& all_placeholders() {
  static const std::vector<std::vector<std::string_view>> all = [] {
    std::vector<std::vector<std::string_view>> out(kTextCount);
    for (size_t i = 0; i < kTextCount; ++i) out[i] = text_placeholders(kEnglish[i].text);
    return out;
  }();
  return all;
}

void report_mismatch(T id, int missing, int unused) {
  g_argument_errors.fetch_add(1);
  static std::mutex mutex;
  static std::vector<bool> told(kTextCount, false);
  std::lock_guard<std::mutex> lock(mutex);
  if (told[static_cast<size_t>(id)]) return;
  told[static_cast<size_t>(id)] = true;
  std::fprintf(stderr, "[tr] text '%.*s': %d placeholder(s) without a value, %d value(s) it has no place for\n",
               static_cast<int>(kEnglish[static_cast<size_t>(id)].id.size()), kEnglish[static_cast<size_t>(id)].id.data(),
               missing, unused);
}

}  // namespace

void set_language(Language language) {
  if (language >= Language::count_) return;
  static std::mutex mutex;  // one change at a time: the table noted is the language set
  static bool noted_once = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (noted_once && g_language.load() == language) return;
  noted_once = true;
  g_language = language;
  // The atlas holds this table's characters; what the frames draw besides is noted again as they draw it.
  forget_noted_glyphs();
  for (const Entry& entry : *kTables[static_cast<size_t>(language)]) note_glyphs(entry.text);
}
Language current_language() { return g_language; }

const char* language_code(Language language) {
  switch (language) {
    case Language::English: return "en";
    case Language::Korean: return "ko";
    case Language::Chinese: return "zh";
    case Language::count_: break;
  }
  return "?";
}

Language system_language() {
  const char* locale = nullptr;
  for (const char* name : {"LC_ALL", "LC_MESSAGES", "LANG"})
    if (const char* v = std::getenv(name); v && *v) {
      locale = v;
      break;
    }
  if (!locale) return Language::English;
  const std::string_view l = locale;
  const auto starts = [&](std::string_view prefix) {
    return l.substr(0, prefix.size()) == prefix &&
           (l.size() == prefix.size() || l[prefix.size()] == '_' || l[prefix.size()] == '.' ||
            l[prefix.size()] == '@' || l[prefix.size()] == '-');
  };
  if (starts("ko")) return Language::Korean;
  if (starts("zh_CN") || starts("zh_SG") || starts("zh-Hans") || l == "zh" || l.substr(0, 3) == "zh.")
    return Language::Chinese;
  return Language::English;
}

const char* language_endonym(Language language) {
  switch (language) {
    case Language::English: return "English";
    case Language::Korean: return "\ud55c\uad6d\uc5b4";        // 한국어
    case Language::Chinese: return "\u7b80\u4f53\u4e2d\u6587";  // 简体中文
    case Language::count_: break;
  }
  return "?";
}

bool language_from_code(std::string_view code, Language* language) {
  for (size_t i = 0; i < static_cast<size_t>(Language::count_); ++i)
    if (code == language_code(static_cast<Language>(i))) {
      *language = static_cast<Language>(i);
      return true;
    }
  return false;
}

std::string_view table_text(Language language, T id) {
  if (language >= Language::count_ || id >= T::count_) return "";
  return (*kTables[static_cast<size_t>(language)])[static_cast<size_t>(id)].text;
}

const char* tr(T id) {
  if (id >= T::count_) return "";
  return (*kTables[static_cast<size_t>(g_language.load())])[static_cast<size_t>(id)].text;
}

std::string tr(T id, std::span<const TextArg> args) {
  for (const TextArg& arg : args) note_glyphs(arg.value);  // a file name, a token: the atlas must hold it
  int missing = 0, unused = 0;
  std::string out = fill_text(tr(id), args, &missing, &unused);
  if (missing || unused) report_mismatch(id, missing, unused);
  return out;
}
std::string tr(T id, std::initializer_list<TextArg> args) { return tr(id, std::span<const TextArg>(args.begin(), args.size())); }

std::string tr_label(T id, std::string_view imgui_id) {
  std::string out = tr(id);
  return out.append("##").append(imgui_id);
}
std::string tr_label(T id, std::initializer_list<TextArg> args, std::string_view imgui_id) {
  std::string out = tr(id, args);
  return out.append("##").append(imgui_id);
}

std::string_view text_id_name(T id) { return id < T::count_ ? kEnglish[static_cast<size_t>(id)].id : "?"; }
std::string_view english_text(T id) { return id < T::count_ ? kEnglish[static_cast<size_t>(id)].text : ""; }

std::span<const std::string_view> placeholders(T id) {
  if (id >= T::count_) return {};
  return all_placeholders()[static_cast<size_t>(id)];
}

bool text_arguments_match(T id, std::span<const std::string_view> names) {
  const std::span<const std::string_view> want = placeholders(id);
  if (names.size() != want.size()) return false;
  for (const std::string_view w : want) {
    int seen = 0;
    for (const std::string_view n : names) seen += n == w;
    if (seen != 1) return false;
  }
  return true;
}
bool text_arguments_match(T id, std::initializer_list<std::string_view> names) {
  return text_arguments_match(id, std::span<const std::string_view>(names.begin(), names.size()));
}

int text_argument_errors() { return g_argument_errors.load(); }
void reset_text_argument_errors() { g_argument_errors = 0; }

std::string text_format_problem(std::string_view text) {
  return walk(text, [](std::string_view) {}, [](std::string_view) {});
}

std::vector<std::string_view> text_placeholders(std::string_view text) {
  std::vector<std::string_view> out;
  walk(text, [](std::string_view) {}, [&](std::string_view name) {
    for (const std::string_view n : out)
      if (n == name) return;
    out.push_back(name);
  });
  return out;
}

std::string fill_text(std::string_view text, std::span<const TextArg> args, int* missing, int* unused) {
  std::string out;
  out.reserve(text.size() + 16);
  std::vector<bool> taken(args.size(), false);
  int left = 0;
  const std::string problem = walk(
      text, [&](std::string_view piece) { out.append(piece); },
      [&](std::string_view name) {
        for (size_t a = 0; a < args.size(); ++a)
          if (args[a].name == name) {
            out.append(args[a].value);
            taken[a] = true;
            return;
          }
        ++left;
        out.append("{").append(name).append("}");
      });
  if (!problem.empty()) return std::string(text);  // a malformed text shows as written (the table check fails)
  if (missing) *missing = left;
  if (unused) {
    *unused = 0;
    for (const bool t : taken) *unused += !t;
  }
  return out;
}

}  // namespace sf::gui
