#include "gui/panels/presentation.h"

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <string_view>

#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"

namespace sf::gui {

namespace {

// Shown for the whole lesson (Next is enabled only at a pause), so the stage does not jump between pauses.
bool shows_prompt(const LessonStatus& lesson) { return lesson.active; }
ImVec2 caption_padding() { return ImVec2(ImGui::GetFontSize() * 0.7f, ImGui::GetFontSize() * 0.35f); }
// Presentation mode's body text is already projector-sized: the caption takes it too, and the maps keep the room
// a larger font would take (a three-line caption in 1.35x type was a quarter of a 1280 x 800 screen).
ImFont* caption_font() { return large_font() && !high_contrast() ? large_font() : ImGui::GetFont(); }

std::string prompt_text(const LessonStatus& lesson) {
  if (lesson.finished) return tr(T::presentation_lesson_end);
  if (lesson.waiting) return tr(T::presentation_lesson_pause, {{"pause", lesson.pause}, {"pauses", lesson.pauses}});
  return "\u2026";  // between pauses: the lesson is running
}

// The prompt's width with `where` as its text, in the current font.
float prompt_content_width(const char* where) {
  const ImGuiStyle& style = ImGui::GetStyle();
  return ImGui::CalcTextSize(where).x + ImGui::CalcTextSize(tr(T::presentation_back)).x +
         ImGui::CalcTextSize(tr(T::presentation_next)).x + 4 * style.FramePadding.x + 2 * style.ItemSpacing.x;
}

// One width for the whole lesson, so nothing shifts as it runs.
float prompt_width(const LessonStatus& lesson) {
  const std::string widest = tr(T::presentation_lesson_pause, {{"pause", lesson.pauses}, {"pauses", lesson.pauses}});
  return std::max(prompt_content_width(widest.c_str()), prompt_content_width(tr(T::presentation_lesson_end)));
}

// Where the lesson is, Back and Next, at the cursor. Returns +1 / -1 when clicked.
int draw_prompt(const LessonStatus& lesson) {
  int step = 0;
  const std::string where = prompt_text(lesson);
  // Right-aligned within its fixed width.
  ImGui::SetCursorPosX(ImGui::GetCursorPosX() + prompt_width(lesson) - prompt_content_width(where.c_str()));
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("%s", where.c_str());
  ImGui::SameLine();
  ImGui::BeginDisabled(!lesson.waiting && !lesson.finished);
  if (ImGui::Button(tr(T::presentation_back))) step = -1;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::presentation_back_tip));
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!lesson.waiting);
  if (ImGui::Button(tr(T::presentation_next))) step = +1;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::presentation_next_tip));
  ImGui::EndDisabled();
  return step;
}

// The caption's text on the left, the prompt (where the lesson is, Back, Next) on the right of its last
// line: one strip, as low as the text allows, so the stage keeps its room.
struct CaptionLayout {
  bool caption = false, prompt = false;
  float box_width = 0;  // 0: as wide as the prompt (no caption)
  float text_width = 0, text_height = 0;
  float prompt_width = 0;
  float height = 0;     // the strip kept free below the stage, margins included
};

CaptionLayout caption_layout(const std::string& caption, const LessonStatus& lesson, float width) {
  CaptionLayout l;
  l.caption = !caption.empty();
  l.prompt = shows_prompt(lesson);
  if (!l.caption && !l.prompt) return l;
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImVec2 padding = caption_padding();
  if (l.prompt) l.prompt_width = prompt_width(lesson);
  float content = l.prompt ? ImGui::GetFrameHeight() : 0.0f;
  if (l.caption) {
    l.box_width = std::max(200.0f, width - 0.5f * ImGui::GetFontSize());
    const float beside = l.prompt ? l.prompt_width + style.ItemSpacing.x : 0.0f;  // the prompt, right of the text
    l.text_width = std::max(100.0f, l.box_width - 2 * padding.x - beside);
    ImGui::PushFont(caption_font());  // (the paper's notation in $...$: gui/render/math_text.h)
    l.text_height = math_text_size(caption, l.text_width).y;
    ImGui::PopFont();
    content = std::max(content, l.text_height);
  }
  l.height = content + 2 * padding.y + 0.5f * ImGui::GetFontSize() + style.ItemSpacing.y;
  return l;
}

}  // namespace

void mark_changed_words(std::vector<StripWord>& now, std::vector<StripWord>& before) {
  const size_t n = now.size(), m = before.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));  // lcs[i][j]: of now[i..], before[j..]
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = now[i].text == before[j].text ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  for (auto& w : now) w.changed = true;
  for (auto& w : before) w.changed = true;
  for (size_t i = 0, j = 0; i < n && j < m;) {
    if (now[i].text == before[j].text) {
      now[i++].changed = false;
      before[j++].changed = false;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      ++i;
    } else {
      ++j;
    }
  }
}

namespace {

// Words in a row that wraps at the window's edge; changed words in `mark` (struck through when `strike`).
void word_flow(const std::vector<StripWord>& words, ImVec4 plain, ImVec4 mark, bool strike, const char* item) {
  const float space = ImGui::CalcTextSize(" ").x;
  for (size_t i = 0; i < words.size(); ++i) {
    const StripWord& w = words[i];
    // Punctuation sits against the word before it, as in written text ("street." not "street .").
    const bool punctuation = w.text.size() == 1 && std::string_view(".,;:!?)").find(w.text[0]) != std::string_view::npos;
    if (i > 0) same_line_if_fits(ImGui::CalcTextSize(w.text.c_str()).x, punctuation ? 0.0f : space);
    ImGui::TextColored(w.changed ? mark : plain, "%s", w.text.c_str());
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    if (w.changed && strike)
      ImGui::GetWindowDrawList()->AddLine(ImVec2(a.x, 0.5f * (a.y + b.y)), ImVec2(b.x, 0.5f * (a.y + b.y)),
                                          ImGui::ColorConvertFloat4ToU32(mark), 2.0f);
    record_item(item, a, b, static_cast<int>(i), w.text, w.changed ? 1.0f : 0.0f);
  }
}

}  // namespace

void draw_sentence_strip(const SentenceStrip& strip) {
  const ImVec4 dim(0.65f, 0.65f, 0.7f, 1.0f), white(1, 1, 1, 1), yellow(1.0f, 0.85f, 0.1f, 1.0f),
      red(1.0f, 0.4f, 0.35f, 1.0f);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextColored(dim, "%s:", strip.source_language.c_str());
  record_item("strip.source_language", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, strip.source_language);
  ImGui::SameLine();
  ImGui::TextUnformatted(strip.source.c_str());
  record_item("strip.source", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, strip.source);
  ImGui::PopTextWrapPos();
  ImGui::TextColored(dim, "%s:", strip.target_language.c_str());
  record_item("strip.target_language", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, strip.target_language);
  ImGui::SameLine();
  // A group: a translation that wraps continues under its first word, as the German above does.
  ImGui::BeginGroup();
  word_flow(strip.now, white, yellow, false, "strip.translation");
  if (strip.decoding) {
    same_line_if_fits(ImGui::CalcTextSize("...").x);
    ImGui::TextColored(dim, "...");
  }
  ImGui::EndGroup();
  if (!strip.badge.empty()) {
    // The badge: white on red, naming what is changed; then the translation as trained.
    const ImVec2 pad = ImGui::GetStyle().FramePadding;
    const ImVec2 text = ImGui::CalcTextSize(strip.badge.c_str());
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + text.x + 2 * pad.x, p.y + text.y + 2 * pad.y),
                                              IM_COL32(200, 30, 30, 255), 6.0f);
    ImGui::GetWindowDrawList()->AddText(ImVec2(p.x + pad.x, p.y + pad.y), IM_COL32(255, 255, 255, 255), strip.badge.c_str());
    ImGui::Dummy(ImVec2(text.x + 2 * pad.x, text.y + 2 * pad.y));
    record_item("strip.badge", p, ImGui::GetItemRectMax(), -1, strip.badge);
    same_line_if_fits(ImGui::CalcTextSize(tr(T::presentation_trained)).x, ImGui::GetFontSize() * 0.6f);
    ImGui::AlignTextToFramePadding();
    ImGui::TextColored(dim, "%s", tr(T::presentation_trained));
    ImGui::SameLine();
    word_flow(strip.before, dim, red, true, "strip.before");
  }
}

int draw_presentation_header(const char* title, const std::string& detail, int stage_number, int stage_count,
                             const std::string& problem, const LessonStatus& lesson) {
  const float top = ImGui::GetCursorPosY();
  // At the right, in the body font, centred on the title's line: the lesson's prompt, then "stage N / M". The
  // title and its detail take what is left: in the large font when they fit there, else in the body font (a
  // title that follows the state, "Decoder masked self-attention (causal mask OFF)", is long).
  const std::string counter = tr(T::presentation_stage_counter, {{"stage", stage_number}, {"stages", stage_count}});
  const float counter_width = ImGui::CalcTextSize(counter.c_str()).x;
  const float right = ImGui::GetWindowContentRegionMax().x;
  const float room = right - ImGui::GetCursorPosX() - counter_width - ImGui::GetFontSize() * 1.5f -
                     (lesson.active ? prompt_width(lesson) + ImGui::GetFontSize() : 0.0f);
  ImFont* large = large_font();
  const auto width_in = [&](ImFont* font) {
    const float size = font ? font->FontSize : ImGui::GetFontSize();
    ImFont* f = font ? font : ImGui::GetFont();
    return f->CalcTextSizeA(size, FLT_MAX, 0, title).x + size * 0.6f +
           (detail.empty() ? 0.0f : f->CalcTextSizeA(size, FLT_MAX, 0, detail.c_str()).x);
  };
  ImFont* font = large && width_in(large) <= room ? large : nullptr;
  const float left = ImGui::GetCursorPosX();
  if (font) ImGui::PushFont(font);
  const float line_height = ImGui::GetTextLineHeight();
  // One line when the title and its detail fit the room; else the detail on a line of its own below.
  const bool one_line = width_in(font) <= room;
  ImGui::PushTextWrapPos(left + room);
  text_wrapped_at_pos(title);
  ImGui::PopTextWrapPos();
  float bottom = ImGui::GetCursorPosY();
  if (!detail.empty()) {
    if (one_line) ImGui::SameLine(0, ImGui::GetFontSize() * 0.6f);
    ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.1f, 1.0f), "%s", detail.c_str());
    record_item("header.detail", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, detail);
    bottom = std::max(bottom, ImGui::GetCursorPosY());
  }
  if (font) ImGui::PopFont();
  // The prompt and the counter at the right of the first line, placed where they belong (not after the title).
  const float y = top + 0.5f * (line_height - ImGui::GetFrameHeight());
  int step = 0;
  if (lesson.active) {
    ImGui::SetCursorPos(ImVec2(right - counter_width - ImGui::GetFontSize() * 1.5f - prompt_width(lesson), y));
    step = draw_prompt(lesson);
  }
  ImGui::SetCursorPos(ImVec2(right - counter_width, y));
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("%s", counter.c_str());
  ImGui::SetCursorPosY(std::max(bottom, top + line_height + ImGui::GetStyle().ItemSpacing.y));
  if (!problem.empty()) ImGui::TextColored(ImVec4(1.0f, 0.4f, 0.35f, 1.0f), "%s", problem.c_str());
  ImGui::Separator();
  return step;
}

float caption_overlay_height(const std::string& caption, const LessonStatus& lesson, float width) {
  return caption_layout(caption, lesson, width).height;
}

int draw_caption_overlay(const std::string& caption, const LessonStatus& lesson, ImVec2 min, ImVec2 max) {
  const CaptionLayout l = caption_layout(caption, lesson, max.x - min.x);
  if (!l.caption && !l.prompt) return 0;
  const float margin = 0.25f * ImGui::GetFontSize();
  // A caption spans the stage; a prompt alone sits in the bottom-right corner.
  if (l.caption) {
    ImGui::SetNextWindowPos(ImVec2(0.5f * (min.x + max.x), max.y - margin), ImGuiCond_Always, ImVec2(0.5f, 1.0f));
    ImGui::SetNextWindowSizeConstraints(ImVec2(l.box_width, 0), ImVec2(l.box_width, FLT_MAX));
  } else {
    ImGui::SetNextWindowPos(ImVec2(max.x - margin, max.y - margin), ImGuiCond_Always, ImVec2(1.0f, 1.0f));
  }
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                                 ImGuiWindowFlags_NoNav | ImGuiWindowFlags_NoMove;
  ImGui::PushStyleColor(ImGuiCol_WindowBg, ImVec4(0.04f, 0.04f, 0.08f, 0.96f));
  ImGui::PushStyleColor(ImGuiCol_Border, ImVec4(1.0f, 0.85f, 0.1f, 1.0f));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 2.0f);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, caption_padding());
  int step = 0;
  if (ImGui::Begin("##caption", nullptr, flags)) {
    const ImVec2 start = ImGui::GetCursorPos();
    if (l.caption) {
      ImGui::PushFont(caption_font());
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 1, 1, 1));
      math_text(caption, l.text_width);
      record_item("caption", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, caption, ImGui::GetFontSize());
      ImGui::PopStyleColor();
      ImGui::PopFont();
    }
    if (l.prompt) {
      if (l.caption)  // level with the caption's last line, at the right
        ImGui::SetCursorPos(ImVec2(start.x + l.box_width - 2 * caption_padding().x - l.prompt_width,
                                   start.y + std::max(0.0f, l.text_height - ImGui::GetFrameHeight())));
      step = draw_prompt(lesson);
    }
  }
  ImGui::End();
  ImGui::PopStyleVar(2);
  ImGui::PopStyleColor(2);
  return step;
}

}  // namespace sf::gui
