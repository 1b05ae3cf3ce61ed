#include "gui/text/glyphs.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_set>

namespace sf::gui {

namespace {

std::mutex g_mutex;
std::unordered_set<char32_t> g_noted;  // guarded by g_mutex
std::atomic<uint64_t> g_generation{1};

// One code point from `s` at `*at` (advanced past it): UTF-8 as RFC 3629 has it, else U+FFFD for one byte.
char32_t next_code_point(std::string_view s, size_t* at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(*at);
  if (b0 < 0x80) return (*at)++, b0;
  int length = 0;
  char32_t cp = 0, least = 0;
  if ((b0 & 0xE0) == 0xC0) length = 2, cp = b0 & 0x1F, least = 0x80;
  else if ((b0 & 0xF0) == 0xE0) length = 3, cp = b0 & 0x0F, least = 0x800;
  else if ((b0 & 0xF8) == 0xF0) length = 4, cp = b0 & 0x07, least = 0x10000;
  if (length == 0 || *at + length > s.size()) return (*at)++, U'\uFFFD';
  for (int k = 1; k < length; ++k) {
    const unsigned char b = byte(*at + k);
    if ((b & 0xC0) != 0x80) return (*at)++, U'\uFFFD';
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return (*at)++, U'\uFFFD';
  *at += length;
  return cp;
}

}  // namespace

std::vector<char32_t> utf8_code_points(std::string_view utf8) {
  std::vector<char32_t> out;
  out.reserve(utf8.size());
  for (size_t at = 0; at < utf8.size();) out.push_back(next_code_point(utf8, &at));
  return out;
}

void note_glyphs(std::string_view utf8) {
  if (std::all_of(utf8.begin(), utf8.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  bool fresh = false;
  for (size_t at = 0; at < utf8.size();) {
    const char32_t cp = next_code_point(utf8, &at);
    if (cp >= 0x80) fresh |= g_noted.insert(cp).second;
  }
  if (fresh) ++g_generation;
}

void note_glyph(char32_t code_point) {
  if (code_point < 0x80) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_noted.insert(code_point).second) ++g_generation;
}

uint64_t glyphs_generation() { return g_generation.load(); }

std::vector<char32_t> noted_glyphs() {
  std::vector<char32_t> out;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    out.assign(g_noted.begin(), g_noted.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void forget_noted_glyphs() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_noted.clear();
  ++g_generation;
}

}  // namespace sf::gui
