#include "gui/words.h"

#include "gui/text/text.h"
#include "model/languages.h"
#include "model/model.h"
#include "util/utf8.h"

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

// [SECTION] a token's bytes as the model reads them

namespace {

void append_hex_byte(unsigned char byte, std::string& out) {
  static const char kHex[] = "0123456789ABCDEF";
  out += '<';
  out += kHex[byte >> 4];
  out += kHex[byte & 15];
  out += '>';
}

// GPT-2's bytes_to_unicode: the bytes that stand for themselves.
bool printable_latin1(int byte) { return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF); }

}  // namespace

std::string piece_as_read(std::string_view bytes) {
  std::string out;
  for (const Utf8Char& ch : decode_utf8(bytes)) {
    const std::string_view source = bytes.substr(ch.begin, ch.end - ch.begin);
    // U+FFFD from a byte that is not whole UTF-8 (decode_utf8 gives one for each such byte); a U+FFFD written
    // in the text itself is its three bytes EF BF BD, and stays a character.
    if (ch.c == 0xFFFD && source != "\xEF\xBF\xBD") {
      for (const char b : source) append_hex_byte(static_cast<unsigned char>(b), out);
    } else if (ch.c == U' ') {
      out += "\u2423";  // ␣
    } else if (ch.c == U'\n') {
      out += "\u21B5";  // ↵
    } else if (ch.c == U'\t') {
      out += "\u21E5";  // ⇥
    } else if (ch.c < 0x20 || ch.c == 0x7F || (ch.c >= 0x80 && ch.c < 0xA0)) {
      for (const char b : source) append_hex_byte(static_cast<unsigned char>(b), out);  // control characters
    } else {
      out.append(source);
    }
  }
  return out;
}

std::string byte_level_piece_bytes(std::string_view piece) {
  std::string out;
  for (const Utf8Char& ch : decode_utf8(piece)) {
    const char32_t c = ch.c;
    if (c < 0x100 && printable_latin1(static_cast<int>(c))) {
      out += static_cast<char>(c);
    } else if (c >= 0x100 && c < 0x100 + 68) {
      // The n-th byte (in byte order) that is not printable Latin-1 is U+0100 + n.
      int n = static_cast<int>(c - 0x100);
      for (int byte = 0; byte < 256; ++byte)
        if (!printable_latin1(byte) && n-- == 0) {
          out += static_cast<char>(byte);
          break;
        }
    } else {
      out.append(piece.substr(ch.begin, ch.end - ch.begin));
    }
  }
  return out;
}

}  // namespace sf::gui
