#include "gui/text/line_breaks.h"

#include "gui/text/glyphs.h"
#include "util/utf8.h"

namespace sf::gui {

namespace {

bool ideographic(char32_t c) {  // Han characters, kana, CJK punctuation and full-width forms
  return (c >= 0x3000 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFF00 && c <= 0xFFEF);
}

}  // namespace

bool cjk_closing_mark(char32_t c) {
  for (const char32_t k : {U'\uFF0C', U'\u3002', U'\u3001', U'\uFF1A', U'\uFF1B', U'\uFF01', U'\uFF1F', U'\uFF09',
                           U'\u300D', U'\u300F', U'\u300B', U'\u201D', U'\u2019', U')', U',', U'.', U':', U';', U'!',
                           U'?'})
    if (c == k) return true;
  return false;
}

bool cjk_opening_mark(char32_t c) {
  for (const char32_t k : {U'\uFF08', U'\u300C', U'\u300E', U'\u300A', U'\u201C', U'\u2018', U'('})
    if (c == k) return true;
  return false;
}

bool cjk_break_between(char32_t before, char32_t after) {
  if (before == U' ' || after == U' ' || before == U'\n' || after == U'\n') return false;  // spaces break anyway
  return (ideographic(before) || ideographic(after)) && !cjk_closing_mark(after) && !cjk_opening_mark(before);
}

std::vector<std::string> break_lines(std::string_view text, float width, const std::function<float(char32_t)>& advance) {
  const std::vector<char32_t> cps = utf8_code_points(text);
  std::vector<std::string> lines;
  size_t start = 0;              // the line's first character
  bool after_soft_break = false;  // a line the breaker ended: the next drops the spaces it would begin with
  while (true) {
    if (after_soft_break)
      while (start < cps.size() && cps[start] == U' ') ++start;
    float x = 0;
    size_t i = start, last_break = start;  // where the line may end (exclusive); > start once one is found
    bool forced = false;
    for (; i < cps.size(); ++i) {
      if (cps[i] == U'\n') {
        forced = true;
        break;
      }
      if (i > start && (cps[i - 1] == U' ' || cjk_break_between(cps[i - 1], cps[i]))) last_break = i;
      const float w = advance(cps[i]);
      if (x + w > width && i > start && cps[i] != U' ') break;  // past the line: it ends before this character
      x += w;
    }
    const bool soft = !forced && i < cps.size();
    const size_t end = soft && last_break > start ? last_break : i;
    size_t trim = end;
    while (soft && trim > start && cps[trim - 1] == U' ') --trim;  // a broken line's last spaces
    std::string line;
    for (size_t k = start; k < trim; ++k) append_utf8(cps[k], line);
    lines.push_back(std::move(line));
    if (!forced && !soft) break;  // the text's end
    start = forced ? i + 1 : end;
    after_soft_break = soft;
  }
  return lines;
}

}  // namespace sf::gui
