#include "gui/panels/message_dialog.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <filesystem>

#include "gui/render/item_placements.h"
#include "gui/text/glyphs.h"
#include "gui/text/text.h"
#include "gui/widgets.h"

namespace sf::gui {

namespace {
// One ImGui id for every message ("###"): the title may change while the popup stays the same popup.
constexpr const char* kPopupId = "###message_dialog";
}  // namespace

void MessageDialog::show(DialogMessage message) { queue_.push_back(std::move(message)); }

void MessageDialog::close() { close_requested_ = !queue_.empty(); }

bool MessageDialog::draw() {
  if (queue_.empty()) return false;
  const DialogMessage& m = queue_.front();
  const std::string name = m.title + kPopupId;
  if (!ImGui::IsPopupOpen(kPopupId)) ImGui::OpenPopup(name.c_str());
  const float em = ImGui::GetFontSize();
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const float width = std::min(em * 42, viewport->WorkSize.x - 2 * em);
  ImGui::SetNextWindowPos(viewport->GetCenter(), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(width, 0));
  bool closed = close_requested_;
  if (ImGui::BeginPopupModal(name.c_str(), nullptr, ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove)) {
    ImGui::PushTextWrapPos(0.0f);
    if (!m.file.empty()) {
      note_glyphs(m.file);  // a file name of any script: the font atlas must hold it
      const std::filesystem::path p(m.file);
      ImGui::TextUnformatted(tr(T::message_dialog_file));
      ImGui::SameLine();
      ImGui::TextUnformatted(p.filename().string().c_str());
      if (p.has_parent_path())
        text_wrapped_at_pos(tr(T::message_dialog_in_folder, {{"folder", p.parent_path().string()}}),
                     &ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
      ImGui::Spacing();
    }
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.55f, 0.5f, 1.0f));
    text_wrapped_at_pos(m.problem);
    record_item("dialog.problem", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, m.problem);
    ImGui::PopStyleColor();
    if (!m.hint.empty()) {
      ImGui::Spacing();
      text_wrapped_at_pos(m.hint);
    }
    ImGui::PopTextWrapPos();
    ImGui::Spacing();
    ImGui::Separator();
    if (ImGui::Button(tr(T::message_dialog_ok), ImVec2(em * 6, 0)) || ImGui::IsKeyPressed(GLFW_KEY_ENTER, false) ||
        ImGui::IsKeyPressed(GLFW_KEY_KP_ENTER, false) || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false))
      closed = true;
    if (ImGui::IsWindowAppearing()) ImGui::SetItemDefaultFocus();
    if (closed) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }
  if (closed) {
    queue_.pop_front();
    close_requested_ = false;
  }
  return !queue_.empty();
}

}  // namespace sf::gui
