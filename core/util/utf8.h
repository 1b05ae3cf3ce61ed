// UTF-8 as RFC 3629 has it, one place for the tokenizer, the app's font census and its line breaking.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sf {

// One character of a text and the bytes it came from.
struct Utf8Char {
  char32_t c;
  size_t begin, end;  // byte span in the input
};

// The characters of `text`. A byte that does not begin or continue valid UTF-8 (a stray continuation byte, an
// overlong form, a surrogate, past U+10FFFF, a sequence cut short) is U+FFFD for that one byte, as a browser or
// Dear ImGui shows it.
std::vector<Utf8Char> decode_utf8(std::string_view text);
// `text` with every invalid sequence replaced by U+FFFD per maximal subpart (Unicode's recommended practice,
// Python's errors="replace", a browser's TextDecoder): "\xE2\x82" is one U+FFFD, "\xC0\xAF" two. GPT-2's tokenizer
// reads text so (model/byte_bpe.h), as its Python reference read the file.
std::string utf8_with_replacements(std::string_view text);
// Appends the UTF-8 bytes of `c` to `out`.
void append_utf8(char32_t c, std::string& out);

}  // namespace sf
