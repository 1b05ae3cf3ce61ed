#include "util/utf8.h"

namespace sf {

std::vector<Utf8Char> decode_utf8(std::string_view s) {
  std::vector<Utf8Char> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    size_t len = 1;
    char32_t c = 0xFFFD;
    if (b0 < 0x80) {
      c = b0;
    } else {
      size_t need = 0;
      char32_t min = 0;
      if ((b0 & 0xE0) == 0xC0) need = 1, c = b0 & 0x1F, min = 0x80;
      else if ((b0 & 0xF0) == 0xE0) need = 2, c = b0 & 0x0F, min = 0x800;
      else if ((b0 & 0xF8) == 0xF0) need = 3, c = b0 & 0x07, min = 0x10000;
      bool ok = need > 0 && i + need < s.size();  // the continuation bytes s[i+1 .. i+need] exist
      if (ok) {
        for (size_t k = 1; k <= need; ++k) {
          const auto b = static_cast<unsigned char>(s[i + k]);
          if ((b & 0xC0) != 0x80) {
            ok = false;
            break;
          }
          c = (c << 6) | (b & 0x3F);
        }
      }
      if (ok && c >= min && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF)) len = need + 1;
      else c = 0xFFFD;
    }
    out.push_back({c, i, i + len});
    i += len;
  }
  return out;
}

std::string utf8_with_replacements(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < s.size()) {
    const unsigned char b0 = byte(i);
    if (b0 < 0x80) {
      out += static_cast<char>(b0);
      ++i;
      continue;
    }
    // The sequence's length and the range its second byte must lie in (Unicode table 3-7: no overlong forms,
    // no surrogates, nothing past U+10FFFF).
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) need = 1;
    else if (b0 == 0xE0) need = 2, lo = 0xA0;
    else if (b0 >= 0xE1 && b0 <= 0xEC) need = 2;
    else if (b0 == 0xED) need = 2, hi = 0x9F;
    else if (b0 >= 0xEE && b0 <= 0xEF) need = 2;
    else if (b0 == 0xF0) need = 3, lo = 0x90;
    else if (b0 >= 0xF1 && b0 <= 0xF3) need = 3;
    else if (b0 == 0xF4) need = 3, hi = 0x8F;
    size_t k = 1;  // bytes of the longest prefix of a valid sequence (the maximal subpart)
    while (need > 0 && k <= need && i + k < s.size()) {
      const unsigned char b = byte(i + k);
      const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
      if (!ok) break;
      ++k;
    }
    if (need > 0 && k == need + 1) out.append(s.substr(i, k));  // a whole, valid character
    else out += "\xEF\xBF\xBD";                                 // U+FFFD for the maximal subpart (at least 1 byte)
    i += k;
  }
  return out;
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

}  // namespace sf
