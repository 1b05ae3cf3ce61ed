#include "gui/panels/view_popup.h"

#include <imgui.h>

#include "gui/fonts.h"
#include "gui/text/glyphs.h"
#include "gui/text/text.h"

namespace sf::gui {

namespace {

// A language as the View popup names it: in its own words where a font draws them ("한국어"), else in the
// current language's ("Korean"), which is then English.
const char* language_label(Language language) {
  if (language_has_font(language)) return language_endonym(language);
  return tr(language == Language::Korean ? T::language_ko : language == Language::Chinese ? T::language_zh : T::language_en);
}

}  // namespace

void ViewPopup::draw(ViewSettings* view) {
  for (size_t i = 0; i < static_cast<size_t>(Language::count_); ++i)  // the font atlas holds the popup's names
    note_glyphs(language_label(static_cast<Language>(i)));
  if (ImGui::Button(tr(T::view_popup_button))) {
    scale_ = view->ui_scale;
    ImGui::OpenPopup("view");
  }
  if (!ImGui::BeginPopup("view")) return;
  // Presentation mode hides the top bar and with it this popup's button: close it.
  if (ImGui::Checkbox(tr(T::view_popup_presentation_mode_f5), &view->present)) ImGui::CloseCurrentPopup();
  ImGui::Checkbox(tr(T::view_popup_full_screen_f11), &view->fullscreen);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  ImGui::SliderFloat(tr(T::view_popup_ui_scale), &scale_, 0.75f, 3.0f, "%.2f");
  // Rebuilding the fonts while the slider is dragged would resize the slider under the pointer.
  if (ImGui::IsItemDeactivatedAfterEdit()) view->ui_scale = scale_;
  // The language of the app's words, each named in its own; one without a font to draw it is greyed, and says
  // which package brings one.
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  if (ImGui::BeginCombo(tr(T::view_popup_language), language_label(view->language))) {
    for (size_t i = 0; i < static_cast<size_t>(Language::count_); ++i) {
      const Language language = static_cast<Language>(i);
      const bool drawable = language_has_font(language);
      if (ImGui::Selectable(language_label(language), language == view->language,
                            drawable ? 0 : ImGuiSelectableFlags_Disabled))
        view->language = language;
      if (!drawable && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("%s", tr(T::view_popup_language_needs_font));
    }
    ImGui::EndCombo();
  }
  ImGui::TextDisabled("%s", tr(view->present ? T::view_popup_font_size_presenting : T::view_popup_font_size,
                               {{"pixels", number_text("%.0f", ImGui::GetFontSize())}})
                                .c_str());
  ImGui::EndPopup();
}

}  // namespace sf::gui
