#include "gui/text/glyphs.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_set>

#include "util/utf8.h"

namespace sf::gui {

namespace {

std::mutex g_mutex;
std::unordered_set<char32_t> g_noted;  // guarded by g_mutex
std::atomic<uint64_t> g_generation{1};

}  // namespace

std::vector<char32_t> utf8_code_points(std::string_view utf8) {
  std::vector<char32_t> out;
  out.reserve(utf8.size());
  for (const Utf8Char& c : decode_utf8(utf8)) out.push_back(c.c);
  return out;
}

void note_glyphs(std::string_view utf8) {
  if (std::all_of(utf8.begin(), utf8.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  bool fresh = false;
  for (const Utf8Char& c : decode_utf8(utf8))
    if (c.c >= 0x80) fresh |= g_noted.insert(c.c).second;
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
