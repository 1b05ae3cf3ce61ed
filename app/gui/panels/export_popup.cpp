#include "gui/panels/export_popup.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>

namespace sf::gui {

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
  if (ImGui::Button("Export...")) {
    tensor_ = std::clamp(tensor_, 0, std::max(0, static_cast<int>(context.tensors.size()) - 1));
    if (is_tensor_kind(kind_) && context.tensors.empty()) kind_ = ExportKind::WindowPng;
    if (!path_edited_) suggest_path(context);
    ImGui::OpenPopup("export");
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Save the window or this panel as PNG, or the tensor it shows as CSV or NPY");

  if (ImGui::BeginPopup("export")) {
    ImGui::TextUnformatted("Export");
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
    if (context.tensors.empty()) ImGui::TextDisabled("(this stage draws no tensor)");
    if (is_tensor_kind(kind_) && context.tensors.size() > 1) {
      ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
      const std::string& current = context.tensors[static_cast<size_t>(tensor_)];
      if (ImGui::BeginCombo("tensor", current.c_str())) {
        for (size_t i = 0; i < context.tensors.size(); ++i)
          if (ImGui::Selectable(context.tensors[i].c_str(), static_cast<int>(i) == tensor_)) {
            tensor_ = static_cast<int>(i);
            if (!path_edited_) suggest_path(context);
          }
        ImGui::EndCombo();
      }
    }
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 24);
    if (ImGui::InputText("file", &path_)) path_edited_ = true;
    std::error_code ec;
    const bool exists = !path_.empty() && std::filesystem::exists(path_, ec);
    if (exists) ImGui::TextColored(ImVec4(1.0f, 0.75f, 0.3f, 1.0f), "exists: you will be asked before it is replaced");
    else ImGui::TextDisabled("in %s", std::filesystem::current_path(ec).string().c_str());

    ExportRequest request;
    request.kind = kind_;
    request.path = path_;
    if (is_tensor_kind(kind_) && !context.tensors.empty())
      request.tensor = context.tensors[static_cast<size_t>(tensor_)];
    ImGui::BeginDisabled(path_.empty());
    const bool save = ImGui::Button("Save") || (ImGui::IsKeyPressed(GLFW_KEY_ENTER) && !path_.empty());
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
    if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }

  if (ask_replace_) {
    ImGui::OpenPopup("Replace file?");
    ask_replace_ = false;
  }
  if (ImGui::BeginPopupModal("Replace file?", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::Text("Replace %s?", replace_request_.path.c_str());
    ImGui::TextDisabled("A file of that name exists. Replace writes the new one in its place.");
    if (ImGui::Button("Replace")) {
      result = replace_request_;
      path_edited_ = false;
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }
  return result;
}

}  // namespace sf::gui
