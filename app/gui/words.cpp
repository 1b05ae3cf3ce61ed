#include "gui/words.h"

#include "gui/text/text.h"
#include "model/languages.h"
#include "model/model.h"

namespace sf::gui {

LanguageWords language_words(const Model* model) {
  LanguageWords w{tr(T::language_source), tr(T::language_target), tr(T::language_source_capital),
                  tr(T::language_target_capital)};
  if (!model) return w;
  // A language's name is a proper noun: the same at the start of a sentence.
  const std::string source = language_name(model->tokenizer.source_language);
  const std::string target = language_name(model->tokenizer.target_language);
  if (!source.empty()) w.source = w.source_capital = source;
  if (!target.empty()) w.target = w.target_capital = target;
  w.named = !source.empty() && !target.empty();
  return w;
}

}  // namespace sf::gui
