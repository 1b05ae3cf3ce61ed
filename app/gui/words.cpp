#include "gui/words.h"

#include "gui/text/text.h"
#include "model/languages.h"
#include "model/model.h"

namespace sf::gui {

std::string language_word(const std::string& code) {
  static const struct {
    const char* two;
    T id;
  } kNames[] = {
#define LANGUAGE(c) {#c, T::language_##c},
      LANGUAGE(ar) LANGUAGE(bg) LANGUAGE(ca) LANGUAGE(cs) LANGUAGE(da) LANGUAGE(de) LANGUAGE(el) LANGUAGE(en)
      LANGUAGE(es) LANGUAGE(et) LANGUAGE(fi) LANGUAGE(fr) LANGUAGE(he) LANGUAGE(hi) LANGUAGE(hu) LANGUAGE(it)
      LANGUAGE(ja) LANGUAGE(ko) LANGUAGE(lt) LANGUAGE(lv) LANGUAGE(nl) LANGUAGE(no) LANGUAGE(pl) LANGUAGE(pt)
      LANGUAGE(ro) LANGUAGE(ru) LANGUAGE(sk) LANGUAGE(sl) LANGUAGE(sv) LANGUAGE(tr) LANGUAGE(uk) LANGUAGE(vi)
      LANGUAGE(zh)
#undef LANGUAGE
  };
  const std::string two = language_code_two(code);
  for (const auto& n : kNames)
    if (two == n.two) return tr(n.id);
  return language_name(code);
}

LanguageWords language_words(const Model* model) {
  LanguageWords w{tr(T::language_source), tr(T::language_target), tr(T::language_source_capital),
                  tr(T::language_target_capital)};
  if (!model) return w;
  // A language's name is a proper noun: the same at the start of a sentence.
  const std::string source = language_word(model->tokenizer.source_language);
  const std::string target = language_word(model->tokenizer.target_language);
  if (!source.empty()) w.source = w.source_capital = source;
  if (!target.empty()) w.target = w.target_capital = target;
  w.named = !source.empty() && !target.empty();
  return w;
}

}  // namespace sf::gui
