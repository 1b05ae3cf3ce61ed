#include "gui/panels/presentation.h"

#include <algorithm>
#include <cfloat>
#include <cstdio>

#include "gui/view.h"

namespace sf::gui {

void draw_presentation_header(const char* title, const std::string& detail, int stage_number, int stage_count,
                              const std::string& problem) {
  ImFont* large = large_font();
  if (large) ImGui::PushFont(large);
  ImGui::TextUnformatted(title);
  if (!detail.empty()) {
    ImGui::SameLine(0, ImGui::GetFontSize() * 0.6f);
    ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.1f, 1.0f), "%s", detail.c_str());
  }
  char counter[32];
  std::snprintf(counter, sizeof(counter), "%d / %d", stage_number, stage_count);
  const float width = ImGui::CalcTextSize(counter).x;
  ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetWindowContentRegionMax().x - width));
  ImGui::TextDisabled("%s", counter);
  if (large) ImGui::PopFont();
  if (!problem.empty()) ImGui::TextColored(ImVec4(1.0f, 0.4f, 0.35f, 1.0f), "%s", problem.c_str());
  ImGui::Separator();
}

namespace {

bool shows_prompt(const LessonStatus& lesson) { return lesson.active && (lesson.waiting || lesson.finished); }
ImVec2 caption_padding() { return ImVec2(ImGui::GetFontSize(), ImGui::GetFontSize() * 0.6f); }

}  // namespace

float caption_overlay_height(const std::string& caption, const LessonStatus& lesson, float width) {
  const bool prompt = shows_prompt(lesson);
  if (caption.empty() && !prompt) return 0.0f;
  const float margin = ImGui::GetFontSize();
  const ImVec2 padding = caption_padding();
  float height = 2 * padding.y + margin;  // the box's padding and the gap below it
  if (!caption.empty()) {
    ImFont* font = large_font() ? large_font() : ImGui::GetFont();
    const float text_width = std::max(200.0f, width - 2 * margin) - 2 * padding.x;
    height += font->CalcTextSizeA(font->FontSize, FLT_MAX, text_width, caption.c_str()).y;
  }
  if (prompt) height += ImGui::GetFrameHeight() + (caption.empty() ? 0.0f : ImGui::GetStyle().ItemSpacing.y);
  return height + ImGui::GetStyle().ItemSpacing.y;
}

int draw_caption_overlay(const std::string& caption, const LessonStatus& lesson, ImVec2 min, ImVec2 max) {
  const bool prompt = shows_prompt(lesson);
  if (caption.empty() && !prompt) return 0;
  const float margin = ImGui::GetFontSize();
  // A caption spans the stage; a prompt alone sits in the bottom-right corner.
  const float width = caption.empty() ? 0.0f : std::max(200.0f, (max.x - min.x) - 2 * margin);
  if (caption.empty()) {
    ImGui::SetNextWindowPos(ImVec2(max.x - margin, max.y - margin), ImGuiCond_Always, ImVec2(1.0f, 1.0f));
  } else {
    ImGui::SetNextWindowPos(ImVec2(0.5f * (min.x + max.x), max.y - margin), ImGuiCond_Always, ImVec2(0.5f, 1.0f));
    ImGui::SetNextWindowSizeConstraints(ImVec2(width, 0), ImVec2(width, FLT_MAX));
  }
  ImGui::SetNextWindowBgAlpha(0.92f);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                                 ImGuiWindowFlags_NoNav | ImGuiWindowFlags_NoMove;
  ImGui::PushStyleColor(ImGuiCol_WindowBg, ImVec4(0.04f, 0.04f, 0.08f, 1.0f));
  ImGui::PushStyleColor(ImGuiCol_Border, ImVec4(1.0f, 0.85f, 0.1f, 1.0f));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 2.0f);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, caption_padding());
  int step = 0;
  if (ImGui::Begin("##caption", nullptr, flags)) {
    if (!caption.empty()) {
      ImFont* large = large_font();
      if (large) ImGui::PushFont(large);
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 1, 1, 1));
      ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width - 2 * caption_padding().x);
      ImGui::TextUnformatted(caption.c_str());
      ImGui::PopTextWrapPos();
      ImGui::PopStyleColor();
      if (large) ImGui::PopFont();
    }
    if (prompt) {
      char where[48];
      if (lesson.finished) std::snprintf(where, sizeof(where), "end of the lesson");
      else std::snprintf(where, sizeof(where), "pause %d of %d", lesson.pause, lesson.pauses);
      const ImGuiStyle& style = ImGui::GetStyle();
      const float buttons = ImGui::CalcTextSize("\u25C0 Back").x + ImGui::CalcTextSize("Next \u25B6").x +
                            4 * style.FramePadding.x + 2 * style.ItemSpacing.x + ImGui::CalcTextSize(where).x;
      if (!caption.empty()) ImGui::SetCursorPosX(std::max(ImGui::GetCursorPosX(), width - margin - buttons));
      ImGui::AlignTextToFramePadding();
      ImGui::TextDisabled("%s", where);
      ImGui::SameLine();
      if (ImGui::Button("\u25C0 Back")) step = -1;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("back to the previous pause (Left, PageUp)");
      ImGui::SameLine();
      ImGui::BeginDisabled(lesson.finished);
      if (ImGui::Button("Next \u25B6")) step = +1;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("on to the next pause (Space, Right, PageDown)");
      ImGui::EndDisabled();
    }
  }
  ImGui::End();
  ImGui::PopStyleVar(2);
  ImGui::PopStyleColor(2);
  return step;
}

}  // namespace sf::gui
