#include "gui/panels/open_model_dialog.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>

#include "gui/text/glyphs.h"
#include "gui/text/text.h"
#include "gui/widgets.h"
#include "model/hf_marian.h"
#if defined(__EMSCRIPTEN__)
#include "web/browser.h"
#endif

namespace sf::gui {

namespace fs = std::filesystem;

namespace {

// The popup's ImGui id ("###"): its title comes from the string table, in the language shown.
constexpr const char* kPopupId = "###open_model";

std::vector<std::string> list_models(const std::string& folder) {
  std::vector<std::string> out;
  std::error_code ec;
  if (folder.empty() || !fs::is_directory(folder, ec)) return out;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".safetensors") out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// One file as a row: its name (clickable, or greyed when the file is gone) and its folder, smaller and dimmer.
bool file_row(const std::string& path, bool exists, int id) {
  note_glyphs(path);  // a file name of any script: the font atlas must hold it
  const fs::path p(path);
  ImGui::PushID(id);
  bool clicked = false;
  if (exists) {
    clicked = ImGui::Selectable(p.filename().string().c_str(), false, ImGuiSelectableFlags_DontClosePopups);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::open_model_dialog_open_tip, {{"path", path}}).c_str());
  } else {
    ImGui::TextDisabled("%s", tr(T::open_model_dialog_missing, {{"file", p.filename().string()}}).c_str());
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s", tr(T::open_model_dialog_no_longer_exists, {{"path", path}}).c_str());
  }
  ImGui::PopID();
  return clicked;
}

}  // namespace

void OpenModelDialog::show(const std::string& path) {
  path_ = path;
  show_requested_ = true;
  close_requested_ = false;
}

OpenModelChoice OpenModelDialog::draw(const std::vector<std::string>& recent, const std::string& shipped_folder) {
  OpenModelChoice choice;
  if (show_requested_) {
    ImGui::OpenPopup(kPopupId);
    shipped_ = list_models(shipped_folder);
    show_requested_ = false;
  }
  const float em = ImGui::GetFontSize();
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->GetCenter(), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(std::min(em * 46, viewport->WorkSize.x - 2 * em), 0));
  const std::string title = std::string(tr(T::open_model_dialog_title)) + kPopupId;  // "title###id"
  open_ = ImGui::BeginPopupModal(title.c_str(), nullptr, ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove);
  if (!open_) return choice;

  ImGui::TextUnformatted(tr(T::open_model_dialog_hint));
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
  ImGui::SetNextItemWidth(-em * 9);
  const bool entered = ImGui::InputText("##model_path", &path_, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  ImGui::BeginDisabled(path_.empty());
  if ((ImGui::Button(tr(T::open_model_dialog_open_button), ImVec2(em * 4, 0)) || entered) && !path_.empty())
    choice.open = path_;
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button(tr(T::open_model_dialog_cancel), ImVec2(em * 4, 0)) || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false))
    close_requested_ = true;
#if defined(__EMSCRIPTEN__)
  // A page cannot read a path the user types: the browser's file picker, or a drop on the page (web/browser.h).
  if (ImGui::Button(tr(T::open_model_dialog_choose_file))) {
    web::choose_file(".safetensors");
    close_requested_ = true;
  }
  ImGui::SameLine();
  text_wrapped(tr(T::open_model_dialog_web_hint));
#else
  ImGui::TextDisabled("%s", tr(T::open_model_dialog_drop_hint));
#endif

  ImGui::Spacing();
  ImGui::TextUnformatted(tr(T::open_model_dialog_recent_files));
  ImGui::Separator();
  if (recent.empty()) ImGui::TextDisabled("%s", tr(T::open_model_dialog_none_yet_models_you));
  std::error_code ec;
  for (size_t i = 0; i < recent.size(); ++i) {
    // a stat or two per row per frame, while open: cheap
    const bool exists = fs::is_regular_file(recent[i], ec) || is_hf_model_folder(recent[i]);
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::SmallButton(tr(T::open_model_dialog_remove))) choice.remove = recent[i];
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::open_model_dialog_remove_tip));
    ImGui::PopID();
    ImGui::SameLine();
    if (file_row(recent[i], exists, static_cast<int>(i))) choice.open = recent[i];
    if (exists) {
      ImGui::SameLine();
      ImGui::TextDisabled("%s", fs::path(recent[i]).parent_path().string().c_str());
    }
  }
  if (!shipped_.empty()) {
    ImGui::Spacing();
    ImGui::TextUnformatted(tr(T::open_model_dialog_shipped_stepformer));
    ImGui::Separator();
    for (size_t i = 0; i < shipped_.size(); ++i)
      if (file_row(shipped_[i], true, 1000 + static_cast<int>(i))) choice.open = shipped_[i];
  }
  if (choice.open || close_requested_) {
    ImGui::CloseCurrentPopup();
    close_requested_ = false;
    open_ = false;
  }
  ImGui::EndPopup();
  return choice;
}

}  // namespace sf::gui
