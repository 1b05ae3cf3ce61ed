// The model's two languages as the views name them: placeholder values for the string table's texts
// (gui/text/text.h: tr(T::id, {{"source", words.source}})), never words joined into a sentence.
#pragma once
#include <string>
#include <string_view>

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

// [SECTION] a token's bytes as the model reads them (byte-level BPE: GPT-2)
// A piece of a byte-level vocabulary is bytes, not always whole characters: " man" (the word with the space
// before it), or two of the four bytes of an emoji. Shown as the model reads it: every space as a visible "␣"
// (never GPT-2's "Ġ"), a newline as "↵", a tab as "⇥", whole UTF-8 characters as themselves, and every byte that
// is not part of a whole character (a sequence cut short, a stray continuation byte, an invalid byte) or is a
// control character as its hex value in angle brackets: "<E2><80>".
std::string piece_as_read(std::string_view bytes);
// The bytes a GPT-2 vocabulary piece stands for ("Ġman" -> " man"): the inverse of its bytes_to_unicode (the
// printable Latin-1 bytes as themselves, the other 68 bytes as U+0100 .. U+0143 in byte order). A character
// outside that map (not a byte-level piece) is kept as its UTF-8.
std::string byte_level_piece_bytes(std::string_view piece);

}  // namespace sf::gui
