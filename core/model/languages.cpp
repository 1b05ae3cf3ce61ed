#include "model/languages.h"

#include <algorithm>
#include <cctype>

namespace sf {

namespace {

struct Language {
  const char* two;    // ISO 639-1
  const char* three;  // ISO 639-2/T (and /B where it differs, below)
  const char* name;
};

// The languages of Multi30k, WMT and the opus-mt models people open most, and the interface's languages.
constexpr Language kLanguages[] = {
    {"ar", "ara", "Arabic"},     {"bg", "bul", "Bulgarian"}, {"ca", "cat", "Catalan"},  {"cs", "ces", "Czech"},
    {"da", "dan", "Danish"},     {"de", "deu", "German"},    {"el", "ell", "Greek"},    {"en", "eng", "English"},
    {"es", "spa", "Spanish"},    {"et", "est", "Estonian"},  {"fi", "fin", "Finnish"},  {"fr", "fra", "French"},
    {"he", "heb", "Hebrew"},     {"hi", "hin", "Hindi"},     {"hu", "hun", "Hungarian"}, {"it", "ita", "Italian"},
    {"ja", "jpn", "Japanese"},   {"ko", "kor", "Korean"},    {"lt", "lit", "Lithuanian"}, {"lv", "lav", "Latvian"},
    {"nl", "nld", "Dutch"},      {"no", "nor", "Norwegian"}, {"pl", "pol", "Polish"},   {"pt", "por", "Portuguese"},
    {"ro", "ron", "Romanian"},   {"ru", "rus", "Russian"},   {"sk", "slk", "Slovak"},   {"sl", "slv", "Slovenian"},
    {"sv", "swe", "Swedish"},    {"tr", "tur", "Turkish"},   {"uk", "ukr", "Ukrainian"}, {"vi", "vie", "Vietnamese"},
    {"zh", "zho", "Chinese"},
};
// ISO 639-2/B codes that differ from /T.
constexpr struct {
  const char* code;
  const char* two;
} kBibliographic[] = {{"ger", "de"}, {"fre", "fr"}, {"cze", "cs"}, {"dut", "nl"}, {"gre", "el"},
                      {"rum", "ro"}, {"slo", "sk"}, {"chi", "zh"}};

}  // namespace

std::string language_code_two(const std::string& code) {
  std::string c;
  for (char ch : code) {
    if (ch == '-' || ch == '_') break;  // "en-US", "pt_BR": the language
    c += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  for (const auto& b : kBibliographic)
    if (c == b.code) c = b.two;
  for (const Language& l : kLanguages)
    if (c == l.two || c == l.three) return l.two;
  return "";
}

std::string language_name(const std::string& code) {
  const std::string two = language_code_two(code);
  for (const Language& l : kLanguages)
    if (two == l.two) return l.name;
  return code;
}

}  // namespace sf
