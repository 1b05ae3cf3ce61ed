#include "gui/render/math_text.h"

#include "gui/text/glyphs.h"
#include "gui/text/line_breaks.h"
#include "util/utf8.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <utility>
#include <vector>

#include "gui/render/item_placements.h"

namespace sf::gui {

namespace {

constexpr float kScriptScale = 0.7f;    // a sub- or superscript's size against its base
constexpr float kSubscriptDrop = 0.22f; // how far a subscript's baseline sits below its base's, in base sizes
constexpr float kSuperscriptRise = 0.42f;

// A piece of text drawn in one size at one height: a word, part of a word, or a breakable space.
struct Run {
  std::string text;
  float scale = 1.0f;  // of the font size
  float shift = 0.0f;  // baseline offset in font sizes, + down
  int group = -1;      // the script group it belongs to (-1: base text)
  int bar = -1;        // the square root whose bar it sits under (-1: none)
  bool space = false;  // a space a line may break at
  bool root_sign = false;
};

// A sub- or superscript group; `stack_on` is the group it is stacked over or under (W_i^Q: Q over i), or -1.
struct Group {
  int stack_on = -1;
};

struct Parsed {
  std::vector<Run> runs;
  std::vector<Group> groups;
  int bars = 0;
};

// The symbols math spans name (\cdot ...), or nullptr.
const char* symbol_named(const std::string& name) {
  static const std::pair<const char*, const char*> kSymbols[] = {
      {"cdot", "\u00b7"},  {"times", "\u00d7"},      {"to", "\u2192"},      {"infty", "\u221e"}, {"sum", "\u03a3"},
      {"ldots", "\u2026"}, {"varepsilon", "\u03b5"}, {"epsilon", "\u03b5"}, {"gamma", "\u03b3"}, {"beta", "\u03b2"},
      {"mu", "\u03bc"},    {"sigma", "\u03c3"},      {"le", "\u2264"},      {"ge", "\u2265"},    {"in", "\u2208"},
      {"log", "log"},       {"exp", "exp"},            {"max", "max"}};
  for (const auto& [n, text] : kSymbols)
    if (name == n) return text;
  return nullptr;
}

size_t utf8_length(unsigned char c) { return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1; }

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  Parsed parse() {
    while (pos_ < s_.size()) {
      if (starts("\\$")) {
        add("$", base_);
        pos_ += 2;
      } else if (s_[pos_] == '$') {
        if (!out_.runs.empty() && cjk_break_between(previous_, U'x')) break_here();  // 的 $x$
        ++pos_;
        math(base_, false);
        previous_ = U'x';  // a formula is a word
      } else if (s_[pos_] == ' ') {
        space();
        ++pos_;
        previous_ = U' ';
      } else {
        // Chinese is written without spaces: a line may break between two characters (gui/text/line_breaks.h).
        const char32_t c = code_point_at(pos_);
        if (!out_.runs.empty() && cjk_break_between(previous_, c)) break_here();
        previous_ = c;
        add_char(base_);
      }
    }
    return std::move(out_);
  }

 private:
  struct Style {
    float scale = 1.0f, shift = 0.0f;
    int group = -1, bar = -1;
  };
  bool starts(const char* p) const { return s_.compare(pos_, std::char_traits<char>::length(p), p) == 0; }
  void space() {
    Run r;
    r.text = " ";
    r.space = true;
    out_.runs.push_back(r);
  }
  // A place a line may break at that takes no room (between two Chinese characters).
  void break_here() {
    Run r;
    r.space = true;
    out_.runs.push_back(r);
  }
  char32_t code_point_at(size_t at) const {
    const std::vector<Utf8Char> c = decode_utf8(std::string_view(s_).substr(at, 4));
    return c.empty() ? U'\uFFFD' : c.front().c;
  }
  char32_t previous_ = U' ';  // the base text's last character (a space at the start)
  void add(const std::string& text, const Style& st, bool root = false) {
    if (!out_.runs.empty() && !root) {
      Run& last = out_.runs.back();
      if (!last.space && !last.root_sign && last.scale == st.scale && last.shift == st.shift &&
          last.group == st.group && last.bar == st.bar) {
        last.text += text;
        return;
      }
    }
    Run r;
    r.text = text;
    r.scale = st.scale;
    r.shift = st.shift;
    r.group = st.group;
    r.bar = st.bar;
    r.root_sign = root;
    out_.runs.push_back(r);
  }
  void add_char(const Style& st) {
    const size_t n = std::min(utf8_length(static_cast<unsigned char>(s_[pos_])), s_.size() - pos_);
    add(s_.substr(pos_, n), st);
    pos_ += n;
  }
  // Math until '$' (top level) or the '}' that closes the group (`in_braces`).
  void math(const Style& st, bool in_braces) {
    int last_script = -1;      // the group just closed, for stacking the next script on it
    char last_script_kind = 0;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (in_braces && c == '}') {
        ++pos_;
        return;
      }
      if (!in_braces && c == '$') {
        ++pos_;
        return;
      }
      if (c == '_' || c == '^') {
        ++pos_;
        Style child = st;
        child.scale = st.scale * kScriptScale;
        child.shift = st.shift + (c == '_' ? kSubscriptDrop : -kSuperscriptRise) * st.scale;
        child.group = static_cast<int>(out_.groups.size());
        Group g;
        if (last_script >= 0 && last_script_kind != c) g.stack_on = last_script;  // W_i^Q
        out_.groups.push_back(g);
        if (pos_ < s_.size() && s_[pos_] == '{') {
          ++pos_;
          math(child, true);
        } else if (pos_ < s_.size() && starts("\\sqrt{")) {
          sqrt(child);
        } else if (pos_ < s_.size()) {
          add_char(child);
        }
        // (a stacked pair is complete: a third script starts a new stack)
        last_script = out_.groups[static_cast<size_t>(child.group)].stack_on >= 0 ? -1 : child.group;
        last_script_kind = c;
        continue;
      }
      last_script = -1;
      if (starts("\\sqrt{")) {
        sqrt(st);
      } else if (starts("\\$")) {
        add("$", st);
        pos_ += 2;
      } else if (const char* symbol = macro(); symbol) {
        add(symbol, st);
      } else if (c == ' ' && !in_braces && st.group < 0 && st.bar < 0) {
        space();
        ++pos_;
      } else {
        add_char(st);
      }
    }
  }
  // A named symbol at pos_ (\cdot, \times, ...): its text, pos_ past the name; nullptr when there is none.
  const char* macro() {
    if (s_[pos_] != '\\') return nullptr;
    size_t end = pos_ + 1;
    while (end < s_.size() && std::isalpha(static_cast<unsigned char>(s_[end]))) ++end;
    const char* text = symbol_named(s_.substr(pos_ + 1, end - pos_ - 1));
    if (text) pos_ = end;
    return text;
  }
  void sqrt(const Style& st) {
    pos_ += 6;  // "\sqrt{"
    add("\u221A", st, /*root=*/true);
    Style under = st;
    under.bar = out_.bars++;
    math(under, true);
  }

  const std::string& s_;
  size_t pos_ = 0;
  Style base_;
  Parsed out_;
};

// Runs placed on lines: x from the line's left, line index.
struct Placed {
  float x = 0, width = 0;
  int line = 0;
};

struct Layout {
  std::vector<Placed> placed;  // one per run
  std::vector<float> line_top_extra, line_bottom_extra;  // beyond the font's own line, per line
  ImVec2 size{0, 0};
};

float run_width(const Run& r, ImFont* font, float size) {
  return font->CalcTextSizeA(size * r.scale, FLT_MAX, 0.0f, r.text.c_str()).x;
}

// Places runs on lines no wider than `wrap` (<= 0: one line), breaking at spaces.
Layout lay_out(const Parsed& p, ImFont* font, float size, float wrap) {
  Layout l;
  const size_t n = p.runs.size();
  l.placed.resize(n);
  // x positions along one unbroken line, with stacked scripts sharing their start.
  std::vector<float> x(n), w(n);
  std::vector<float> group_start(p.groups.size(), 0.0f), group_end(p.groups.size(), 0.0f);
  float pen = 0.0f;
  int current_group = -2;
  for (size_t i = 0; i < n; ++i) {
    const Run& r = p.runs[i];
    if (r.group != current_group) {  // a group starts (or base text resumes)
      if (current_group >= 0) group_end[static_cast<size_t>(current_group)] = pen;
      if (r.group >= 0) {
        const int on = p.groups[static_cast<size_t>(r.group)].stack_on;
        if (on >= 0) pen = group_start[static_cast<size_t>(on)];
        group_start[static_cast<size_t>(r.group)] = pen;
      }
      // after a stacked pair, the pen is past the wider of the two
      if (current_group >= 0) {
        const int on = p.groups[static_cast<size_t>(current_group)].stack_on;
        if (on >= 0 && r.group != current_group) pen = std::max(pen, group_end[static_cast<size_t>(on)]);
      }
      current_group = r.group;
    }
    w[i] = run_width(r, font, size);
    x[i] = pen;
    pen += w[i];
  }
  // Atoms: the runs between breakable spaces. A line takes atoms while they fit.
  float line_start = 0.0f, widest = 0.0f;
  int line = 0;
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && !p.runs[j].space) ++j;
    float atom_end = x[i];
    for (size_t k = i; k < j; ++k) atom_end = std::max(atom_end, x[k] + w[k]);
    if (wrap > 0 && atom_end - line_start > wrap && x[i] > line_start) {  // the atom starts a new line
      ++line;
      line_start = x[i];
    }
    for (size_t k = i; k < j; ++k) l.placed[k] = {x[k] - line_start, w[k], line};
    widest = std::max(widest, atom_end - line_start);
    if (j < n) l.placed[j] = {x[j] - line_start, w[j], line};  // the space (not drawn)
    i = j + 1;
  }
  const int lines = n ? line + 1 : 1;
  l.line_top_extra.assign(static_cast<size_t>(lines), 0.0f);
  l.line_bottom_extra.assign(static_cast<size_t>(lines), 0.0f);
  const float ascent = font->Ascent / font->FontSize, descent = -font->Descent / font->FontSize;  // of a size
  for (size_t k = 0; k < n; ++k) {
    const Run& r = p.runs[k];
    const size_t li = static_cast<size_t>(l.placed[k].line);
    // A run's top and bottom against the base text's, in pixels.
    const float top = (r.shift + ascent * (1.0f - r.scale)) * size;  // + below the base's top
    const float bottom = (r.shift - descent * (1.0f - r.scale)) * size;
    l.line_top_extra[li] = std::max(l.line_top_extra[li], -top + (r.bar >= 0 ? 2.0f : 0.0f));
    l.line_bottom_extra[li] = std::max(l.line_bottom_extra[li], bottom);
  }
  float height = 0.0f;
  for (int k = 0; k < lines; ++k)
    height += l.line_top_extra[static_cast<size_t>(k)] + size + l.line_bottom_extra[static_cast<size_t>(k)];
  l.size = ImVec2(widest, height);
  return l;
}

// The characters drawn, for the font atlas (gui/text/glyphs.h): the runs' text, where a caption from outside the
// table has its own and a named symbol its glyph (\\sigma: \u03c3).
void note_runs(const Parsed& p) {
  for (const Run& r : p.runs) note_glyphs(r.text);
}

}  // namespace

ImVec2 math_text_size(const std::string& text, float wrap_width) {
  const Parsed p = Parser(text).parse();
  note_runs(p);
  return lay_out(p, ImGui::GetFont(), ImGui::GetFontSize(), wrap_width).size;
}

void math_text(const std::string& text, float wrap_width, ImU32 colour, const char* item) {
  ImFont* font = ImGui::GetFont();
  const float size = ImGui::GetFontSize();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  if (wrap_width == 0)
    wrap_width = std::max(1.0f, ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x - origin.x);
  const Parsed p = Parser(text).parse();
  note_runs(p);  // a caption or a value from outside the table, a named symbol: the font atlas must hold them
  const Layout l = lay_out(p, font, size, wrap_width);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 col = colour ? colour : ImGui::GetColorU32(ImGuiCol_Text);
  std::vector<float> line_y(l.line_top_extra.size());  // each line's base text top
  float y = origin.y;
  for (size_t k = 0; k < line_y.size(); ++k) {
    line_y[k] = y + l.line_top_extra[k];
    y = line_y[k] + size + l.line_bottom_extra[k];
  }
  const float ascent = font->Ascent / font->FontSize;
  // Square roots: the bar spans the runs under it, from the sign's top right.
  std::vector<ImVec2> bar_from(static_cast<size_t>(p.bars), ImVec2(FLT_MAX, FLT_MAX)), bar_to(static_cast<size_t>(p.bars), ImVec2(-FLT_MAX, 0));
  for (size_t k = 0; k < p.runs.size(); ++k) {
    const Run& r = p.runs[k];
    if (r.space) continue;
    const Placed& at = l.placed[k];
    const float top = line_y[static_cast<size_t>(at.line)] + (r.shift + ascent * (1.0f - r.scale)) * size;
    const ImVec2 pos(origin.x + at.x, top);
    draw->AddText(font, size * r.scale, pos, col, r.text.c_str());
    if (r.root_sign && k + 1 < p.runs.size() && p.runs[k + 1].bar >= 0) {
      ImVec2& from = bar_from[static_cast<size_t>(p.runs[k + 1].bar)];
      from = ImVec2(pos.x + at.width * 0.92f, top + size * r.scale * 0.12f);
    }
    if (r.bar >= 0) {
      ImVec2& to = bar_to[static_cast<size_t>(r.bar)];
      to.x = std::max(to.x, pos.x + at.width);
    }
  }
  for (int b = 0; b < p.bars; ++b) {
    const ImVec2 from = bar_from[static_cast<size_t>(b)], to = bar_to[static_cast<size_t>(b)];
    if (from.x < to.x) draw->AddLine(from, ImVec2(to.x, from.y), col, std::max(1.0f, size / 16.0f));
  }
  ImGui::Dummy(l.size.x > 0 ? l.size : ImVec2(1.0f, size));
  if (item) record_item(item, origin, ImVec2(origin.x + l.size.x, origin.y + l.size.y), -1, text, size);
}

std::string math_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '$') out += '\\';
    out += c;
  }
  return out;
}

std::string math_plain(const std::string& text) {
  // As it reads on one line: a square root as "\u221a(...)", symbols by their names' glyphs, no dollars.
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "\\$") == 0) {
      out += '$';
      ++i;
    } else if (text[i] == '$') {
      continue;
    } else if (text.compare(i, 6, "\\sqrt{") == 0) {
      int depth = 1;
      size_t j = i + 6;
      for (; j < text.size() && depth > 0; ++j) depth += text[j] == '{' ? 1 : text[j] == '}' ? -1 : 0;
      out += "\u221a(" + math_plain(text.substr(i + 6, j - i - 6 - (depth == 0 ? 1 : 0))) + ")";
      i = j - 1;
    } else if (text[i] == '\\') {
      size_t end = i + 1;
      while (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end]))) ++end;
      const char* symbol = symbol_named(text.substr(i + 1, end - i - 1));
      if (symbol) {
        out += symbol;
        i = end - 1;
      } else {
        out += text[i];
      }
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace sf::gui
