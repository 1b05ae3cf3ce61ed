#include "gui/panels/lessons_popup.h"

#include <imgui.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "gui/render/item_placements.h"
#include "gui/script/script_parse.h"
#include "gui/text/glyphs.h"
#include "util/paths.h"

namespace sf::gui {

namespace fs = std::filesystem;

namespace {

// A lesson's title and pauses, from the parser that plays it (lenient, as a lesson is read); false when the file
// cannot be read (not a regular file, too large: gui/script/script_parse.h says which).
bool read_lesson_facts(const std::string& path, LessonEntry* entry) {
  std::string error;
  const std::optional<Script> lesson = parse_script_file(path, error, ScriptParse::Lesson);
  if (!lesson) return false;
  for (const ScriptCommand& c : lesson->commands) {
    if (c.name == "title" && entry->title.empty() && !c.args.empty()) entry->title = c.args[0];
    entry->pauses += c.name == "pause";
  }
  return true;
}

}  // namespace

std::string shipped_lessons_folder() {
  return (fs::path(shipped_model_path()).parent_path().parent_path() / "lessons").string();
}

std::vector<LessonEntry> find_lessons(const std::string& folder, Language language) {
  // NAME.lesson is English; NAME.CODE.lesson the language of CODE.
  std::map<std::string, std::map<std::string, std::string>> files;  // name -> code ("" English) -> path
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (file.size() <= 7 || file.substr(file.size() - 7) != ".lesson") continue;
    const std::string stem = file.substr(0, file.size() - 7);
    const size_t dot = stem.rfind('.');
    const std::string name = dot == std::string::npos ? stem : stem.substr(0, dot);
    const std::string code = dot == std::string::npos ? "" : stem.substr(dot + 1);
    if (!name.empty()) files[name][code] = it->path().string();
  }
  const std::string wanted = language == Language::English ? "" : language_code(language);
  std::vector<LessonEntry> out;
  for (const auto& [name, versions] : files) {
    LessonEntry entry;
    entry.name = name;
    if (auto it = versions.find(wanted); it != versions.end()) {
      entry.path = it->second;
      entry.in_language = true;
    } else if (auto english = versions.find(""); english != versions.end()) {
      entry.path = english->second;
    } else {
      continue;  // only in other languages
    }
    if (read_lesson_facts(entry.path, &entry)) out.push_back(std::move(entry));
  }
  return out;
}

std::optional<std::string> LessonsPopup::draw(const std::string& folder, Language language) {
  std::optional<std::string> picked;
  if (ImGui::Button(tr(T::lessons_button))) {
    lessons_ = find_lessons(folder, language);
    ImGui::OpenPopup("lessons");
  }
  record_item("lessons.button", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
  if (!ImGui::BeginPopup("lessons")) return picked;
  ImGui::TextDisabled("%s", tr(T::lessons_heading));
  ImGui::Separator();
  if (lessons_.empty()) ImGui::TextUnformatted(tr(T::lessons_none, {{"folder", folder}}).c_str());
  for (const LessonEntry& lesson : lessons_) {
    const std::string title = lesson.title.empty() ? lesson.name : lesson.title;
    const std::string label = lesson.in_language ? title : tr(T::lessons_in_english, {{"title", title}});
    note_glyphs(label);  // a title in any language: the font atlas must hold it
    if (ImGui::Selectable((label + "##" + lesson.path).c_str())) {
      picked = lesson.path;
      ImGui::CloseCurrentPopup();
    }
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s", tr(T::lessons_file, {{"file", lesson.path}, {"pauses", lesson.pauses}}).c_str());
  }
  ImGui::EndPopup();
  return picked;
}

}  // namespace sf::gui
