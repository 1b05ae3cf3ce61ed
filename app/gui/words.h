// The model's two languages as the views name them: placeholder values for the string table's texts
// (gui/text/text.h: tr(T::id, {{"source", words.source}})), never words joined into a sentence.
#pragma once
#include <string>

namespace sf {
struct Model;
}

namespace sf::gui {

// "German" and "English" from the file's tokenizer settings (model/languages.h), or the table's "source" and
// "target" for a file that does not say (a converted checkpoint whose converter was not told:
// tools/convert_pytorch.py --src-lang, --tgt-lang). The capital forms begin a sentence or a label ("Source").
struct LanguageWords {
  std::string source, target;
  std::string source_capital, target_capital;
  bool named = false;  // both come from the file
};
LanguageWords language_words(const Model* model);
// A language's name in the interface's language, from its code ("de", "deu": "German", "독일어", "德语"); the core's
// name (model/languages.h: the code itself) for a language the table does not list.
std::string language_word(const std::string& code);

}  // namespace sf::gui
