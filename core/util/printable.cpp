#include "util/printable.h"

#include <cstdint>
#include <cstdio>

namespace sf {

namespace {

// The length of the valid UTF-8 sequence starting at text[i] (1-4), or 0 when it is not one.
size_t utf8_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
  if (n == 2 && b < 0xc2) return 0;
  if (n == 3 && ((b == 0xe0 && byte(i + 1) < 0xa0) || (b == 0xed && byte(i + 1) >= 0xa0))) return 0;
  if (n == 4 && ((b == 0xf0 && byte(i + 1) < 0x90) || b > 0xf4 || (b == 0xf4 && byte(i + 1) >= 0x90))) return 0;
  return n;
}

// The code point of the valid UTF-8 sequence of `n` bytes at text[i].
uint32_t code_point(std::string_view text, size_t i, size_t n) {
  const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(text[k])); };
  if (n == 1) return byte(i);
  uint32_t cp = byte(i) & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) cp = cp << 6 | (byte(i + k) & 0x3f);
  return cp;
}

}  // namespace

bool is_bidi_control(uint32_t cp) {
  return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", b);
    out += hex;
  };
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_length(text, i);
    const auto b = static_cast<unsigned char>(text[i]);
    if (n == 0) {
      escape(b);
      ++i;
    } else if (n == 1 && (b < 0x20 || b == 0x7f)) {
      escape(b);
      ++i;
    } else if (n == 2 && b == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0) {  // U+0080-U+009F
      escape(b);
      escape(static_cast<unsigned char>(text[i + 1]));
      i += 2;
    } else if (const uint32_t cp = code_point(text, i, n); is_bidi_control(cp)) {
      char u[12];
      std::snprintf(u, sizeof u, "\\u%04x", static_cast<unsigned>(cp));
      out += u;
      i += n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string printable_lines(std::string_view text) {
  std::string out;
  for (size_t at = 0;;) {
    const size_t end = text.find('\n', at);
    out += printable(text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    if (end == std::string_view::npos) return out;
    out += '\n';
    at = end + 1;
  }
}

}  // namespace sf
