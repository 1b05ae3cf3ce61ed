// Language names for what a model file says of its languages (tokenizer settings' source_language and
// target_language: "de", "en"; a Marian model's tokenizer_config source_lang, which may be ISO 639-2 "deu").
#pragma once
#include <string>

namespace sf {

// The English name of a language code ("de", "deu", "ger" -> "German"; case and a region suffix ignored:
// "en-US" -> "English"); the code as given when it is none of the languages listed in languages.cpp; "" for "".
std::string language_name(const std::string& code);
// The ISO 639-1 code of one of those languages ("deu", "ger", "DE-at" -> "de"); "" for a code not listed.
std::string language_code_two(const std::string& code);

}  // namespace sf
