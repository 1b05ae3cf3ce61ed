#include "gui/settings.h"

#include "gui/export.h"

#include <fcntl.h>
#include <stdio.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "gui/text/text.h"
#include "io/json_text.h"
#include "io/user_files.h"
#include "util/printable.h"
#if defined(__EMSCRIPTEN__)
#include "web/browser.h"
#endif

namespace sf::gui {

namespace fs = std::filesystem;

bool Settings::operator==(const Settings& o) const {
  return recent_models == o.recent_models && last_model == o.last_model && last_sentence == o.last_sentence &&
         last_stage == o.last_stage && ui_scale == o.ui_scale &&
         language == o.language;
}

void add_recent_model(Settings& settings, const std::string& path) {
  remove_recent_model(settings, path);
  settings.recent_models.insert(settings.recent_models.begin(), path);
  if (settings.recent_models.size() > static_cast<size_t>(kMaxRecentModels))
    settings.recent_models.resize(kMaxRecentModels);
}

void remove_recent_model(Settings& settings, const std::string& path) {
  auto& r = settings.recent_models;
  r.erase(std::remove(r.begin(), r.end(), path), r.end());
}

nlohmann::json settings_to_json(const Settings& s) {
  nlohmann::json j = {{"version", kSettingsVersion},     {"recent_models", s.recent_models},
                      {"last_model", s.last_model},      {"last_sentence", s.last_sentence},
                      {"last_stage", s.last_stage},      {"ui_scale", s.ui_scale}};
  if (!s.language.empty()) j["language"] = s.language;
  return j;
}

Settings settings_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::runtime_error(tr(T::settings_not_an_object, {{"type", j.type_name()}}));
  auto bad = [](const std::string& key, const std::string& expected, const nlohmann::json& v) {
    // A list or an object is named, not printed: a damaged file may hold megabytes of it.
    const std::string found = v.is_structured()
                                  ? std::string(tr(v.is_array() ? T::settings_a_list : T::settings_an_object))
                                  : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return std::runtime_error(
        tr(T::settings_bad_value, {{"key", key}, {"expected", expected}, {"found", found.substr(0, 80)}}));
  };
  Settings s;
  if (j.contains("version") && !j["version"].is_number_integer())
    throw bad("version", tr(T::settings_expected_whole_number), j["version"]);
  if (j.contains("recent_models")) {
    const auto& r = j["recent_models"];
    if (!r.is_array()) throw bad("recent_models", tr(T::settings_expected_paths), r);
    for (const auto& p : r)
      if (!p.is_string() || p.get<std::string>().size() > kMaxSettingsText)
        throw bad("recent_models", tr(T::settings_expected_paths), p);
    // Most recent first: adding from the back keeps the order and drops duplicates and the extras.
    for (auto it = r.rbegin(); it != r.rend(); ++it)
      if (!it->get<std::string>().empty()) add_recent_model(s, it->get<std::string>());
  }
  for (const auto& [key, member] : {std::pair<const char*, std::string*>{"last_model", &s.last_model},
                                    {"last_sentence", &s.last_sentence},
                                    {"last_stage", &s.last_stage}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_string()) throw bad(key, tr(T::settings_expected_string), j[key]);
    *member = j[key].get<std::string>();
    if (member->size() > kMaxSettingsText)
      throw std::runtime_error(
          tr(T::settings_too_long, {{"key", key}, {"bytes", member->size()}, {"limit", kMaxSettingsText}}));
  }
  if (j.contains("ui_scale")) {
    const auto& v = j["ui_scale"];
    if (!v.is_number() || !(v.get<double>() >= 0.5 && v.get<double>() <= 4.0))
      throw bad("ui_scale", tr(T::settings_expected_scale), v);
    s.ui_scale = v.get<float>();
  }
  if (j.contains("language")) {
    // A string; a code this version does not speak (a newer one's "ja", "es-419") is kept and left to the locale
    // (options.cpp), never a reason to put the whole file aside. Only a wrong type is damage.
    const auto& v = j["language"];
    if (!v.is_string()) throw bad("language", tr(T::settings_expected_language), v);
    const std::string code = v.get<std::string>();
    const bool tag = code.size() <= 35 && std::all_of(code.begin(), code.end(), [](char ch) {
                       return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_';
                     });
    s.language = tag ? code : std::string();
  }
  return s;
}

std::string default_settings_path() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg && xdg[0] == '/') return (fs::path(xdg) / "stepformer" / "settings.json").string();
  const char* home = std::getenv("HOME");
  if (home && *home) return (fs::path(home) / ".config" / "stepformer" / "settings.json").string();
  return "";
}

namespace {

// Moves a damaged settings file aside to PATH.bad, or PATH.bad.2, .3, ... when earlier copies exist (they are
// kept: each may be the only copy of someone's recent files). Returns the new name, or "" and `error`.
std::string move_aside(const std::string& path, std::string& error) {
  for (int n = 1; n <= 100; ++n) {
    std::string aside = path + ".bad";  // (appended: GCC 12 misreads "." + ... here as an overlapping copy, -Wrestrict)
    if (n > 1) aside.append(".").append(std::to_string(n));
    // RENAME_NOREPLACE: never over an earlier copy, even one that appears while we look.
#if defined(RENAME_NOREPLACE)
    if (::renameat2(AT_FDCWD, path.c_str(), AT_FDCWD, aside.c_str(), RENAME_NOREPLACE) == 0) return aside;
    if (errno == EEXIST) continue;
    if (errno == EINVAL || errno == ENOSYS) {  // a file system without RENAME_NOREPLACE: check, then rename
#else
    {  // a C library without renameat2 (a web page's, where nothing else writes the page's files): check, then rename
#endif
      std::error_code ec;
      if (fs::exists(fs::symlink_status(aside, ec))) continue;
      if (::rename(path.c_str(), aside.c_str()) == 0) return aside;
    }
    error = std::strerror(errno);
    return "";
  }
  error = tr(T::settings_bad_copies_in_the_way);
  return "";
}

}  // namespace

SettingsRead read_settings(const std::string& path) {
  SettingsRead r;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return r;
  std::string what;
  try {
    // A regular file of at most kMaxSettingsBytes, read without blocking (a FIFO here never hangs the start),
    // parsed with a nesting limit (a file of a million '[' never exhausts the stack).
    const std::string text = read_user_file(path, kMaxSettingsBytes, tr(T::settings_the_file), "settings");
    if (json_nesting_depth(text) > kMaxJsonNesting)
      throw std::runtime_error(tr(T::settings_too_deep, {{"levels", kMaxJsonNesting}}));
    r.settings = settings_from_json(nlohmann::json::parse(text));
    return r;
  } catch (const nlohmann::json::parse_error& e) {
    what = tr(T::settings_not_json, {{"byte", e.byte}});
  } catch (const std::exception& e) {
    what = e.what();
    if (what.rfind("[settings] ", 0) == 0) what = what.substr(11);
  }
  r.settings = Settings{};
  std::string move_error;
  const std::string aside = move_aside(path, move_error);
  r.problem = aside.empty() ? tr(T::settings_damaged_kept, {{"path", path}, {"problem", what}, {"reason", move_error}})
                            : tr(T::settings_damaged_moved, {{"path", path}, {"problem", what}, {"aside", aside}});
  r.leave_alone = aside.empty();
  return r;
}

std::string write_settings(const Settings& settings, const std::string& path) {
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec) return tr(T::settings_cannot_create_folder, {{"folder", target.parent_path().string()}, {"reason", ec.message()}});
  const std::string text = settings_to_json(settings).dump(2) + "\n";
  const std::string error = write_user_file(path, text, WriteRules{true, {}, {}});  // temp file, fsync, rename
#if defined(__EMSCRIPTEN__)
  if (error.empty()) web::keep_settings(text);  // the page's files end with the page: the browser keeps them
#endif
  return error;
}

SettingsStore::SettingsStore(std::string path, Clock::duration min_interval)
    : path_(std::move(path)), min_interval_(min_interval) {
  if (path_.empty()) return;
  SettingsRead r = read_settings(path_);
  problem_ = r.problem;
  if (r.leave_alone) path_.clear();  // run with the defaults and never write over the damaged file
  settings_ = stored_ = r.settings;
}

SettingsStore::~SettingsStore() { flush(); }

bool SettingsStore::save_if_due(Clock::time_point now) {
  if (!enabled() || settings_ == stored_ || write_failed_) return false;
  if (writes_ > 0 && now - last_write_ < min_interval_) return false;
  return write_now(now);
}

void SettingsStore::flush() {
  if (enabled() && settings_ != stored_ && !write_failed_) write_now(Clock::now());
}

bool SettingsStore::write_now(Clock::time_point now) {
  const std::string error = write_settings(settings_, path_);
  last_write_ = now;
  if (!error.empty()) {
    write_failed_ = true;  // once: the next change would fail the same way
    problem_ = tr(T::settings_cannot_save, {{"reason", error}});
    problem_taken_ = false;
    std::fprintf(stderr, "stepformer: %s\n", printable(problem_).c_str());
    return false;
  }
  stored_ = settings_;
  ++writes_;
  return true;
}

std::string SettingsStore::take_problem() {
  if (problem_taken_) return "";
  problem_taken_ = true;
  return problem_;
}

}  // namespace sf::gui
