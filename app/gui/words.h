// Words the views fill in from the model on show, and the one way they are filled in: a text with named
// placeholders ("the {source} sentence"), never a sentence built by concatenation.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace sf {
struct Model;
}

namespace sf::gui {

// The model's two languages as the views name them: "German" and "English" from the file's tokenizer settings
// (model/languages.h), or "source" and "target" for a file that does not say (a converted checkpoint whose
// converter was not told: tools/convert_pytorch.py --src-lang, --tgt-lang).
struct LanguageWords {
  std::string source = "source", target = "target";
  bool named = false;  // both come from the file
};
LanguageWords language_words(const Model* model);

// `pattern` with each "{name}" replaced by its value; a placeholder without a value stays as it is.
std::string fill(std::string pattern, const std::vector<std::pair<std::string, std::string>>& values);
// The same with the language placeholders {source} and {target} ("German", "English"), and {Source} and
// {Target} capitalised (a sentence's first word, a label).
std::string fill_languages(const std::string& pattern, const LanguageWords& words);

}  // namespace sf::gui
