#include "gui/panels/export_popup.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>

#include "gui/text/text.h"

namespace sf::gui {

// The replace dialog's ImGui id ("###"): its title comes from the string table.
constexpr const char* kReplaceId = "###replace_file";

namespace {

bool is_tensor_kind(ExportKind kind) { return kind == ExportKind::Csv || kind == ExportKind::Npy; }

}  // namespace

void ExportPopup::suggest_path(const Context& context) {
  std::string what;
  if (kind_ == ExportKind::PanelPng) what = "panel";
  if (is_tensor_kind(kind_) && !context.tensors.empty())
    what = context.tensors[static_cast<size_t>(std::clamp(tensor_, 0, static_cast<int>(context.tensors.size()) - 1))];
  path_ = default_export_path("", context.stage, kind_, what);
}

std::optional<ExportRequest> ExportPopup::draw(const Context& context) {
  std::optional<ExportRequest> result;
  if (ImGui::Button(tr(T::export_popup_button))) {
    tensor_ = std::clamp(tensor_, 0, std::max(0, static_cast<int>(context.tensors.size()) - 1));
    if (is_tensor_kind(kind_) && context.tensors.empty()) kind_ = ExportKind::WindowPng;
    if (!path_edited_) suggest_path(context);
    ImGui::OpenPopup("export");
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::export_popup_save_window_panel_png));

  if (ImGui::BeginPopup("export")) {
    ImGui::TextUnformatted(tr(T::export_popup_title));
    ImGui::Separator();
    for (ExportKind kind : {ExportKind::WindowPng, ExportKind::PanelPng, ExportKind::Csv, ExportKind::Npy}) {
      const bool disabled = is_tensor_kind(kind) && context.tensors.empty();
      ImGui::BeginDisabled(disabled);
      if (ImGui::RadioButton(export_kind_label(kind), kind_ == kind) && kind_ != kind) {
        kind_ = kind;
        if (!path_edited_) suggest_path(context);
      }
      ImGui::EndDisabled();
    }
    if (context.tensors.empty()) ImGui::TextDisabled("%s", tr(T::export_popup_stage_draws_no_tensor));
    if (is_tensor_kind(kind_) && context.tensors.size() > 1) {
      ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
      const std::string& current = context.tensors[static_cast<size_t>(tensor_)];
      if (ImGui::BeginCombo(tr(T::export_popup_tensor), current.c_str())) {
        for (size_t i = 0; i < context.tensors.size(); ++i)
          if (ImGui::Selectable(context.tensors[i].c_str(), static_cast<int>(i) == tensor_)) {
            tensor_ = static_cast<int>(i);
            if (!path_edited_) suggest_path(context);
          }
        ImGui::EndCombo();
      }
    }
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 24);
    if (ImGui::InputText(tr(T::export_popup_file), &path_)) path_edited_ = true;
    std::error_code ec;
    const bool exists = !path_.empty() && std::filesystem::exists(path_, ec);
    if (exists)
      ImGui::TextColored(ImVec4(1.0f, 0.75f, 0.3f, 1.0f), "%s", tr(T::export_popup_exists_you_will_asked));
    else
#if defined(__EMSCRIPTEN__)  // a web page: the file is written in the page's memory and handed to the browser
      ImGui::TextDisabled("%s", tr(T::export_popup_web_download));
#else
      ImGui::TextDisabled(
          "%s", tr(T::export_popup_in_folder, {{"folder", std::filesystem::current_path(ec).string()}}).c_str());
#endif

    ExportRequest request;
    request.kind = kind_;
    request.path = path_;
    if (is_tensor_kind(kind_) && !context.tensors.empty())
      request.tensor = context.tensors[static_cast<size_t>(tensor_)];
    ImGui::BeginDisabled(path_.empty());
    const bool save =
        ImGui::Button(tr(T::export_popup_save)) || (ImGui::IsKeyPressed(GLFW_KEY_ENTER) && !path_.empty());
    ImGui::EndDisabled();
    if (save) {
      if (exists) {
        replace_request_ = request;
        replace_request_.replace = true;
        ask_replace_ = true;
      } else {
        result = request;
        path_edited_ = false;  // the next export suggests a fresh name
      }
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button(tr(T::export_popup_cancel))) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }

  if (ask_replace_) {
    ImGui::OpenPopup(kReplaceId);
    ask_replace_ = false;
  }
  if (ImGui::BeginPopupModal((tr(T::export_popup_replace_file) + std::string(kReplaceId)).c_str(), nullptr,
                             ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::TextUnformatted(tr(T::export_popup_replace_question, {{"path", replace_request_.path}}).c_str());
    ImGui::TextDisabled("%s", tr(T::export_popup_file_name_exists_replace));
    if (ImGui::Button(tr(T::export_popup_replace_button))) {
      result = replace_request_;
      path_edited_ = false;
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button(tr(T::export_popup_cancel)) || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }
  return result;
}

}  // namespace sf::gui
