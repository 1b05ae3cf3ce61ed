#include "gui/words.h"

#include <cctype>

#include "model/languages.h"
#include "model/model.h"

namespace sf::gui {

LanguageWords language_words(const Model* model) {
  LanguageWords w;
  if (!model) return w;
  const std::string source = language_name(model->tokenizer.source_language);
  const std::string target = language_name(model->tokenizer.target_language);
  if (!source.empty()) w.source = source;
  if (!target.empty()) w.target = target;
  w.named = !source.empty() && !target.empty();
  return w;
}

std::string fill(std::string pattern, const std::vector<std::pair<std::string, std::string>>& values) {
  std::string out;
  out.reserve(pattern.size());
  for (size_t i = 0; i < pattern.size();) {
    if (pattern[i] == '{') {
      const size_t close = pattern.find('}', i);
      if (close != std::string::npos) {
        const std::string name = pattern.substr(i + 1, close - i - 1);
        bool found = false;
        for (const auto& [key, value] : values)
          if (key == name) {
            out += value;
            found = true;
            break;
          }
        if (found) {
          i = close + 1;
          continue;
        }
      }
    }
    out += pattern[i++];
  }
  return out;
}

std::string fill_languages(const std::string& pattern, const LanguageWords& words) {
  const auto capital = [](std::string s) {
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return s;
  };
  return fill(pattern, {{"source", words.source}, {"target", words.target}, {"Source", capital(words.source)},
                        {"Target", capital(words.target)}});
}

}  // namespace sf::gui
