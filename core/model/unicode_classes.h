// The character classes of GPT-2's pre-tokenising pattern (model/byte_bpe.h): \p{L} (letters), \p{N} (numbers) and
// \s (white space), as the Python `regex` module that GPT-2's tokenizer uses matches them (the ranges in
// unicode_classes.inc are generated from it by tools/make_unicode_classes.py).
#pragma once

namespace sf {

bool is_unicode_letter(char32_t c);  // \p{L}
bool is_unicode_number(char32_t c);  // \p{N}
bool is_unicode_space(char32_t c);   // \s

}  // namespace sf
