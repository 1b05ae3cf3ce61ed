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

}  // namespace sf::gui
