// Every word the app shows, from one table keyed by id (gui/text/en.inc), with named placeholders:
//   tr(T::app_translate)                                          -> "Translate"
//   tr(T::app_detail_layer_head, {{"layer", 2}, {"head", 5}})      -> "layer 2, head 5"
// A sentence is never built by concatenation, so that a language with another word order fits: each language
// is a table with the same ids (en.inc, ko.inc, zh.inc), chosen by set_language().
//
// The table's texts:
//   {name}       a placeholder: lowercase letters, digits and underscores, starting with a letter. The caller
//                gives each one a value, by name; numbers with a fixed precision are formatted by the caller.
//   $...$        math in the paper's notation (gui/render/math_text.h): braces there are the math's groups
//                ("$d_{model}$"), never placeholders; \$ is a dollar sign. A value that goes into a formula is
//                formatted into the formula by the code that builds it (notation is not words).
//   No other brace outside math: a literal brace is not needed and not allowed (the check says so).
// A placeholder given no value, or a value whose name the text does not have, is a programming error: tr()
// leaves the "{name}" visible, tells stderr once per id and counts it (text_argument_errors(), which the tests
// read); text_arguments_match() says beforehand whether a set of names fits an entry.
#pragma once
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace sf::gui {

enum class T : uint16_t {
#define X(id, text) id,
#include "gui/text/en.inc"
#undef X
  count_
};
constexpr size_t kTextCount = static_cast<size_t>(T::count_);

// The languages the table has: a table each (en.inc, ko.inc, zh.inc), the same ids in the same order. Korean and
// Chinese need a font with their characters (gui/fonts.h); without one the app stays in English.
enum class Language : uint8_t { English, Korean, Chinese, count_ };
// Chooses the table tr() reads, and notes its characters for the font atlas (gui/text/glyphs.h).
void set_language(Language language);
Language current_language();
const char* language_code(Language language);  // "en", "ko", "zh"
const char* language_endonym(Language language);  // in its own words: "English", "한국어", "简体中文"
// The system's language where it is one of these, from the locale's variables as the C library orders them
// (LC_ALL, LC_MESSAGES, LANG: "ko_KR.UTF-8" -> Korean; "zh_CN.UTF-8", "zh_SG", "zh" -> Chinese, whose table is
// Simplified: not "zh_TW" or "zh_HK", whose readers write Traditional); else English.
Language system_language();
// The language of a code ("en", "ko", "zh"); false for another.
bool language_from_code(std::string_view code, Language* language);
// The text of `id` in `language` (the tests compare the tables).
std::string_view table_text(Language language, T id);

// One placeholder's value: its name and the text that replaces "{name}".
struct TextArg {
  std::string_view name;
  std::string value;
  TextArg(std::string_view n, const char* v) : name(n), value(v ? v : "") {}
  TextArg(std::string_view n, std::string v) : name(n), value(std::move(v)) {}
  TextArg(std::string_view n, std::string_view v) : name(n), value(v) {}
  template <std::integral I>
    requires(!std::same_as<I, bool> && !std::same_as<I, char>)
  TextArg(std::string_view n, I v) : name(n), value(std::to_string(v)) {}
};

// The text of `id` in the current language. For an entry without placeholders (the check below holds it).
const char* tr(T id);
// The text of `id` with each placeholder replaced by the value of that name.
std::string tr(T id, std::initializer_list<TextArg> args);
std::string tr(T id, std::span<const TextArg> args);
// `tr(id)` then "##" and `imgui_id`: a widget label whose visible text is from the table and whose ImGui id
// stays unique ("OK##message").
std::string tr_label(T id, std::string_view imgui_id);
std::string tr_label(T id, std::initializer_list<TextArg> args, std::string_view imgui_id);

// A number formatted for a placeholder's value with a printf conversion ("%.3f", "%5.1f", "%lld"): the
// precision is the caller's, as the value's meaning decides it.
template <class N>
  requires std::is_arithmetic_v<N>
std::string number_text(const char* printf_format, N value) {
  char buf[64];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  std::snprintf(buf, sizeof(buf), printf_format, value);
#pragma GCC diagnostic pop
  return buf;
}

// The entry's id as written in the table ("attention_title"), and its English text.
std::string_view text_id_name(T id);
std::string_view english_text(T id);
// The names of the entry's placeholders, in order of first use, each once.
std::span<const std::string_view> placeholders(T id);
// Whether `names` are exactly the entry's placeholders (each once, any order).
bool text_arguments_match(T id, std::span<const std::string_view> names);
bool text_arguments_match(T id, std::initializer_list<std::string_view> names);
// How many calls of tr() got arguments that did not match their entry (since the start, or the last reset).
int text_argument_errors();
void reset_text_argument_errors();

// What is wrong with a table text ("" when nothing): an unbalanced or stray brace outside math, a placeholder
// name that is not lowercase letters, digits and underscores, an unclosed $...$ span.
std::string text_format_problem(std::string_view text);
// The placeholders of a text, in order of first use, each once (the rules above).
std::vector<std::string_view> text_placeholders(std::string_view text);
// Fills `text`'s placeholders from `args`; a placeholder with no value stays as "{name}". `unused` (when not
// null) counts the arguments no placeholder took, `missing` the placeholders left unfilled.
std::string fill_text(std::string_view text, std::span<const TextArg> args, int* missing = nullptr, int* unused = nullptr);

}  // namespace sf::gui
